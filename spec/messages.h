/*
 * messages.h - every API message trainplane parses or renders, in one
 * place: the roots of ml v1 (Job), Vertex (CustomJob, TrainingPipeline,
 * HyperparameterTuningJob) and the messages around them (list replies,
 * IAM policies, operations, log entries), whose descriptors reach all the
 * others.
 */
#ifndef TP_MESSAGES_H
#define TP_MESSAGES_H

#include <jansson.h>

/*
 * The descriptors of every message as JSON (schema_describe): what
 * `trainplane-server --schemas` prints, which tests/integration/
 * openapi.test.mjs holds openapi.yaml's component schemas to.
 */
json_t *spec_messages_describe(void);

#endif
