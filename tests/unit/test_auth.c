/* Unit tests: permissions, roles, policies and the tokens file (server/auth.c),
 * and the reloadable snapshot (lib/snapshot.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "auth.h"
#include "snapshot.h"

static void permission_of(const char *op, const char *want)
{
	char buf[128];
	assert_true(auth_permission(op, buf, sizeof(buf)));
	assert_string_equal(buf, want);
}

static void permissions_follow_operation_ids(void **state)
{
	(void)state;
	permission_of("ml.projects.jobs.get", "ml.jobs.get");
	permission_of("ml.projects.jobs.patch", "ml.jobs.update");
	permission_of("ml.projects.jobs.setIamPolicy", "ml.jobs.setIamPolicy");
	permission_of("ml.projects.getConfig", "ml.projects.getConfig");
	permission_of("ml.projects.locations.list", "ml.locations.list");
	permission_of("aiplatform.projects.locations.customJobs.create", "aiplatform.customJobs.create");
	permission_of("aiplatform.projects.locations.operations.wait", "aiplatform.operations.wait");
	permission_of("aiplatform.projects.locations.trainingPipelines.cancel",
		      "aiplatform.trainingPipelines.cancel");
	permission_of("logging.entries.list", "logging.logEntries.list");
	permission_of("trainplane.nodes.drain", "trainplane.nodes.drain");
	char buf[32];
	assert_false(auth_permission("healthz", buf, sizeof(buf)));
	assert_false(auth_permission("metrics", buf, sizeof(buf)));
}

static void roles_by_verb(void **state)
{
	(void)state;
	assert_int_equal(auth_role_needed("ml.jobs.get"), ROLE_VIEWER);
	assert_int_equal(auth_role_needed("ml.jobs.list"), ROLE_VIEWER);
	assert_int_equal(auth_role_needed("logging.logEntries.list"), ROLE_VIEWER);
	assert_int_equal(auth_role_needed("aiplatform.operations.wait"), ROLE_VIEWER);
	assert_int_equal(auth_role_needed("ml.jobs.create"), ROLE_DEVELOPER);
	assert_int_equal(auth_role_needed("ml.jobs.update"), ROLE_DEVELOPER);
	assert_int_equal(auth_role_needed("aiplatform.customJobs.delete"), ROLE_DEVELOPER);
	assert_int_equal(auth_role_needed("ml.jobs.getIamPolicy"), ROLE_ADMIN);
	assert_int_equal(auth_role_needed("trainplane.nodes.list"), ROLE_ADMIN);
	/* a verb nobody classified yet needs the most */
	assert_int_equal(auth_role_needed("ml.jobs.frobnicate"), ROLE_ADMIN);
}

static void tokens_reach_their_projects(void **state)
{
	char *projects[] = { "a", "b" };
	struct auth_token dev = { .role = ROLE_DEVELOPER, .projects = projects, .nprojects = 2 };
	struct auth_token all = { .role = ROLE_VIEWER, .all_projects = true };

	(void)state;
	assert_true(auth_token_allows(&dev, "a", "ml.jobs.cancel"));
	assert_true(auth_token_allows(&dev, "b", "ml.jobs.get"));
	assert_false(auth_token_allows(&dev, "c", "ml.jobs.get"));
	assert_false(auth_token_allows(&dev, "a", "ml.jobs.setIamPolicy"));
	assert_false(auth_token_allows(&dev, "a", "trainplane.nodes.list"));
	assert_true(auth_token_allows(&all, "anything", "ml.jobs.list"));
	assert_false(auth_token_allows(&all, "anything", "ml.jobs.create"));
}

static void policies_grant_by_role_and_member(void **state)
{
	json_t *p = json_loads("{\"bindings\":["
			       "{\"role\":\"roles/ml.viewer\",\"members\":[\"user:bob\"]},"
			       "{\"role\":\"roles/ml.developer\",\"members\":[\"group:ops\"]},"
			       "{\"role\":\"roles/storage.admin\",\"members\":[\"user:eve\"]},"
			       "{\"role\":\"roles/ml.admin\",\"members\":[\"allAuthenticatedUsers\"]}]}",
			       0, NULL);
	json_t *viewer_only = json_loads("{\"bindings\":[{\"role\":\"roles/ml.viewer\","
					 "\"members\":[\"user:bob\"]}]}", 0, NULL);

	(void)state;
	assert_non_null(p);
	assert_true(auth_policy_allows(viewer_only, "user:bob", "ml.jobs.get"));
	assert_false(auth_policy_allows(viewer_only, "user:bob", "ml.jobs.cancel"));
	assert_false(auth_policy_allows(viewer_only, "user:bobby", "ml.jobs.get"));
	assert_false(auth_policy_allows(viewer_only, NULL, "ml.jobs.get"));
	assert_true(auth_policy_allows(p, "group:ops", "ml.jobs.cancel"));
	assert_true(auth_policy_allows(p, "user:anyone", "ml.jobs.setIamPolicy"));
	/* unknown roles grant nothing; job policies grant only job permissions */
	assert_false(auth_policy_allows(viewer_only, "user:eve", "ml.jobs.get"));
	assert_false(auth_policy_allows(p, "user:bob", "aiplatform.customJobs.get"));
	assert_int_equal(auth_iam_role("roles/ml.jobOwner"), ROLE_ADMIN);
	assert_int_equal(auth_iam_role("roles/editor"), ROLE_DEVELOPER);
	assert_int_equal(auth_iam_role("roles/ml.modelOwner"), ROLE_NONE);
	json_decref(p);
	json_decref(viewer_only);
}

static char path[64];

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static int load_text(const char *text, struct auth_tokens **t, char *err, size_t len)
{
	snprintf(path, sizeof(path), "/tmp/tp-tokens-%d.yaml", (int)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return auth_tokens_load(path, t, err, len);
}

#define HASH_A "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"	/* hello */

static void tokens_file_loads_and_finds(void **state)
{
	struct auth_tokens *t;
	char err[512];
	char hex[65];

	(void)state;
	assert_int_equal(load_text("tokens:\n"
				   "  - name: alice\n"
				   "    sha256: " HASH_A "\n"
				   "    role: developer\n"
				   "    projects: [a, \"*\"]\n"
				   "  - {name: bob, member: 'user:bob@x.org', role: viewer, projects: [b],\n"
				   "     sha256: 486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7}\n",
				   &t, err, sizeof(err)), 0);
	assert_int_equal(t->n, 2);
	assert_string_equal(t->v[0].member, "user:alice");
	assert_true(t->v[0].all_projects);
	assert_string_equal(t->v[1].member, "user:bob@x.org");
	auth_sha256_hex("hello", hex);
	assert_string_equal(hex, HASH_A);
	assert_ptr_equal(auth_tokens_find(t, "hello"), &t->v[0]);
	assert_ptr_equal(auth_tokens_find(t, "world"), &t->v[1]);
	assert_null(auth_tokens_find(t, "hello "));
	auth_tokens_free(t);
}

static void expect_error(const char *text, const char *want)
{
	struct auth_tokens *t = NULL;
	char err[512];

	assert_int_equal(load_text(text, &t, err, sizeof(err)), -1);
	assert_null(t);
	if (!strstr(err, want))
		fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

static void tokens_file_errors_name_line_and_column(void **state)
{
	(void)state;
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: root\n    projects: [a]\n",
		     ":4:11: role must be viewer, developer or admin, not \"root\"");
	expect_error("tokens:\n  - name: a\n    sha256: hello\n    role: viewer\n    projects: [a]\n",
		     ":3:13: sha256 must be 64 hex digits");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: viewer\n",
		     ":2:5: token a needs projects");
	expect_error("tokens:\n  - name: a\n    sha256: " HASH_A "\n    role: viewer\n    projects: [a]\n"
		     "  - name: b\n    sha256: " HASH_A "\n    role: viewer\n    projects: [a]\n",
		     ":6:5: tokens a and b have the same hash");
	expect_error("tokens:\n  - name: a\n    secret: x\n", ":3:5: unknown key \"secret\"");
	expect_error("tokens: [\n", "did not find expected node content");
	expect_error("users: []\n", ":1:1: unknown key");
}

static int freed;
static void count_free(void *p)
{
	freed++;
	free(p);
}

static void snapshot_frees_a_replaced_version_after_its_last_reader(void **state)
{
	struct snap_ref *r1, *r2;
	struct snapshot *s = snapshot_new(strdup("one"), count_free);

	(void)state;
	freed = 0;
	const char *a = snapshot_acquire(s, &r1);
	assert_string_equal(a, "one");
	snapshot_replace(s, strdup("two"));
	assert_int_equal(freed, 0);	/* r1 still reads "one" */
	assert_string_equal(a, "one");
	const char *b = snapshot_acquire(s, &r2);
	assert_string_equal(b, "two");
	snapshot_release(r1);
	assert_int_equal(freed, 1);
	snapshot_release(r2);
	assert_int_equal(freed, 1);
	snapshot_free(s);
	assert_int_equal(freed, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(permissions_follow_operation_ids),
		cmocka_unit_test(roles_by_verb),
		cmocka_unit_test(tokens_reach_their_projects),
		cmocka_unit_test(policies_grant_by_role_and_member),
		cmocka_unit_test_teardown(tokens_file_loads_and_finds, teardown),
		cmocka_unit_test_teardown(tokens_file_errors_name_line_and_column, teardown),
		cmocka_unit_test(snapshot_frees_a_replaced_version_after_its_last_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
