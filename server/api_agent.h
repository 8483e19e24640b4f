/*
 * api_agent.h - the agent protocol (agent/PROTOCOL.md) and the operators'
 * nodes API (/trainplane/v1/nodes), and the replicas of a job.
 */
#ifndef TP_API_AGENT_H
#define TP_API_AGENT_H

#include "http.h"

void api_agent_register(struct request *req);
void api_agent_sync(struct request *req);
void api_nodes_list(struct request *req);
void api_nodes_drain(struct request *req);
void api_nodes_undrain(struct request *req);
/*
 * GET /trainplane/v1/projects/{project}/replicas?job=NAME: the replicas of
 * the job NAME (an ml job, a Vertex custom job, training pipeline or
 * tuning job of that project) and of its trials, with node, GPU indices,
 * attempt and exit code: what neither Google API shows.
 */
void api_replicas_list(struct request *req);

#endif
