#include "api_types.h"

#include "common.h"

#define IAM "type.googleapis.com/google.iam.v1."
#define LOGGING "type.googleapis.com/google.logging.v2."
#define LRO "type.googleapis.com/google.longrunning."
#define MESSAGE(var, url, fields) \
	const struct schema_message var = { url, fields, ARRAY_SIZE(fields) }

const struct schema_message api_empty_message = { "type.googleapis.com/google.protobuf.Empty",
						  NULL, 0 };

/* --- google.longrunning ------------------------------------------------------ */

/* metadata and response are google.protobuf.Any, error a google.rpc.Status:
 * JSON objects kept as they are. */
static const struct schema_field operation_fields[] = {
	{ "name", "name", SK_STRING, .number = 1 },
	{ "metadata", "metadata", SK_STRUCT, .number = 2 },
	{ "done", "done", SK_BOOL, .number = 3 },
	{ "error", "error", SK_STRUCT, .number = 4 },
	{ "response", "response", SK_STRUCT, .number = 5 },
};
MESSAGE(api_operation_message, LRO "Operation", operation_fields);

static const struct schema_field list_operations_response_fields[] = {
	{ "operations", "operations", SK_MESSAGE, .number = 1, .repeated = 1,
	  .message = &api_operation_message },
	{ "nextPageToken", "next_page_token", SK_STRING, .number = 2 },
};
MESSAGE(api_list_operations_response_message, LRO "ListOperationsResponse",
	list_operations_response_fields);

/* --- google.iam.v1 ------------------------------------------------------------ */

static const struct schema_field expr_fields[] = {
	{ "expression", "expression", SK_STRING, .number = 1 },
	{ "title", "title", SK_STRING, .number = 2 },
	{ "description", "description", SK_STRING, .number = 3 },
	{ "location", "location", SK_STRING, .number = 4 },
};
static MESSAGE(expr_message, "type.googleapis.com/google.type.Expr", expr_fields);

static const struct schema_field binding_fields[] = {
	{ "role", "role", SK_STRING, .number = 1 },
	{ "members", "members", SK_STRING, .number = 2, .repeated = 1 },
	{ "condition", "condition", SK_MESSAGE, .number = 3, .message = &expr_message },
};
static MESSAGE(binding_message, IAM "Binding", binding_fields);

static const char *const log_type_names[] = { "LOG_TYPE_UNSPECIFIED", "ADMIN_READ", "DATA_WRITE",
					      "DATA_READ" };
static const struct schema_enum log_type = { IAM "AuditLogConfig.LogType", log_type_names,
					     ARRAY_SIZE(log_type_names) };

static const struct schema_field audit_log_config_fields[] = {
	{ "logType", "log_type", SK_ENUM, .number = 1, .enumeration = &log_type },
	{ "exemptedMembers", "exempted_members", SK_STRING, .number = 2, .repeated = 1 },
};
static MESSAGE(audit_log_config_message, IAM "AuditLogConfig", audit_log_config_fields);

static const struct schema_field audit_config_fields[] = {
	{ "service", "service", SK_STRING, .number = 1 },
	{ "auditLogConfigs", "audit_log_configs", SK_MESSAGE, .number = 3, .repeated = 1,
	  .message = &audit_log_config_message },
};
static MESSAGE(audit_config_message, IAM "AuditConfig", audit_config_fields);

static const struct schema_field policy_fields[] = {
	{ "version", "version", SK_INT32, .number = 1 },
	{ "bindings", "bindings", SK_MESSAGE, .number = 4, .repeated = 1,
	  .message = &binding_message },
	{ "auditConfigs", "audit_configs", SK_MESSAGE, .number = 6, .repeated = 1,
	  .message = &audit_config_message },
	{ "etag", "etag", SK_BYTES, .number = 3 },
};
MESSAGE(iam_policy_message, IAM "Policy", policy_fields);

/* updateMask is a google.protobuf.FieldMask: a string in JSON. */
static const struct schema_field set_policy_request_fields[] = {
	{ "policy", "policy", SK_MESSAGE, .number = 2, .message = &iam_policy_message },
	{ "updateMask", "update_mask", SK_STRING, .number = 3 },
};
MESSAGE(iam_set_policy_request_message, IAM "SetIamPolicyRequest", set_policy_request_fields);

static const struct schema_field test_permissions_request_fields[] = {
	{ "permissions", "permissions", SK_STRING, .number = 2, .repeated = 1 },
};
MESSAGE(iam_test_permissions_request_message, IAM "TestIamPermissionsRequest",
	test_permissions_request_fields);

static const struct schema_field test_permissions_response_fields[] = {
	{ "permissions", "permissions", SK_STRING, .number = 1, .repeated = 1 },
};
MESSAGE(iam_test_permissions_response_message, IAM "TestIamPermissionsResponse",
	test_permissions_response_fields);

/* --- google.logging.v2 ------------------------------------------------------- */

static const char *const severity_names[] = { "DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING",
					      "ERROR", "CRITICAL", "ALERT", "EMERGENCY" };
static const int severity_numbers[] = { 0, 100, 200, 300, 400, 500, 600, 700, 800 };
static const struct schema_enum severity = { "type.googleapis.com/google.logging.type.LogSeverity",
					     severity_names, ARRAY_SIZE(severity_names),
					     severity_numbers };

static const struct schema_field monitored_resource_fields[] = {
	{ "type", "type", SK_STRING, .number = 1 },
	{ "labels", "labels", SK_STRING, .number = 2, .map = 1 },
};
static MESSAGE(monitored_resource_message, "type.googleapis.com/google.api.MonitoredResource",
	       monitored_resource_fields);

/* What store/store_log.c writes of a LogEntry. */
static const struct schema_field log_entry_fields[] = {
	{ "textPayload", "text_payload", SK_STRING, .number = 3 },
	{ "insertId", "insert_id", SK_STRING, .number = 4 },
	{ "resource", "resource", SK_MESSAGE, .number = 8, .message = &monitored_resource_message },
	{ "timestamp", "timestamp", SK_TIMESTAMP, .number = 9 },
	{ "severity", "severity", SK_ENUM, .number = 10, .enumeration = &severity },
	{ "labels", "labels", SK_STRING, .number = 11, .map = 1 },
	{ "logName", "log_name", SK_STRING, .number = 12 },
	{ "receiveTimestamp", "receive_timestamp", SK_TIMESTAMP, .number = 24, .output_only = 1 },
};
static MESSAGE(log_entry_message, LOGGING "LogEntry", log_entry_fields);

/* What server/api_logging.c reads of a ListLogEntriesRequest. */
static const struct schema_field list_entries_request_fields[] = {
	{ "filter", "filter", SK_STRING, .number = 2 },
	{ "orderBy", "order_by", SK_STRING, .number = 3 },
	{ "pageSize", "page_size", SK_INT32, .number = 4 },
	{ "pageToken", "page_token", SK_STRING, .number = 5 },
	{ "resourceNames", "resource_names", SK_STRING, .number = 8, .repeated = 1 },
};
MESSAGE(logging_list_entries_request_message, LOGGING "ListLogEntriesRequest",
	list_entries_request_fields);

static const struct schema_field list_entries_response_fields[] = {
	{ "entries", "entries", SK_MESSAGE, .number = 1, .repeated = 1,
	  .message = &log_entry_message },
	{ "nextPageToken", "next_page_token", SK_STRING, .number = 2 },
};
MESSAGE(logging_list_entries_response_message, LOGGING "ListLogEntriesResponse",
	list_entries_response_fields);
