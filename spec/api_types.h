/*
 * api_types.h - the messages around the jobs, as schema data: what the APIs
 * share (google.protobuf.Empty, google.longrunning), IAM policies
 * (google.iam.v1, parsed by server/api_iam.c) and the Cloud Logging v2
 * entries:list subset (google.logging.v2). Fields by proto field number
 * where the public protos give one (googleapis: google/iam/v1/policy.proto,
 * google/longrunning/operations.proto, google/logging/v2/log_entry.proto,
 * logging.proto), except Policy, kept in the order its replies have always
 * had.
 */
#ifndef TP_API_TYPES_H
#define TP_API_TYPES_H

#include "schema.h"

extern const struct schema_message api_empty_message;	/* google.protobuf.Empty: {} */

/* google.longrunning */
extern const struct schema_message api_operation_message;	/* Operation */
extern const struct schema_message api_list_operations_response_message;

/* google.iam.v1 */
extern const struct schema_message iam_policy_message;	/* Policy */
extern const struct schema_message iam_set_policy_request_message;	/* SetIamPolicyRequest */
extern const struct schema_message iam_test_permissions_request_message;
extern const struct schema_message iam_test_permissions_response_message;

/* google.logging.v2 */
extern const struct schema_message logging_list_entries_request_message;
extern const struct schema_message logging_list_entries_response_message;

#endif
