/*
 * api_agent.h - the agent protocol (agent/PROTOCOL.md) and the operators'
 * nodes API (/trainplane/v1/nodes).
 */
#ifndef TP_API_AGENT_H
#define TP_API_AGENT_H

#include "http.h"

void api_agent_register(struct request *req);
void api_agent_sync(struct request *req);
void api_nodes_list(struct request *req);
void api_nodes_drain(struct request *req);
void api_nodes_undrain(struct request *req);

#endif
