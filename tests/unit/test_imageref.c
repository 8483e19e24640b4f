/*
 * test_imageref.c - image references and environment variable names
 * (lib/imageref.c), table-driven: references docker and podman accept, with
 * where their parts lie, and references that must be refused (engine options
 * first of all), each with the reason it must give.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "imageref.h"
#include "strbuf.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX32 "0123456789ABCDEF0123456789abcdef"

/* Expected parts of a valid reference ("" = absent). */
struct valid_case {
	const char *ref, *domain, *path, *tag, *digest;
};

static const struct valid_case valid[] = {
	{ "busybox", "", "busybox", "", "" },
	{ "a", "", "a", "", "" },
	{ "localhost/trainer:test", "localhost", "trainer", "test", "" },
	{ "localhost:5000/trainer:test", "localhost:5000", "trainer", "test", "" },
	{ "docker.io/library/busybox:1.36.1", "docker.io", "library/busybox", "1.36.1", "" },
	{ "us-docker.pkg.dev/my-project/trainers/mnist:v2", "us-docker.pkg.dev",
	  "my-project/trainers/mnist", "v2", "" },
	{ "gcr.io/cloud-ml-algos/image_classification:latest", "gcr.io",
	  "cloud-ml-algos/image_classification", "latest", "" },
	{ "registry.example.com:443/team/img@sha256:" HEX64, "registry.example.com:443", "team/img",
	  "", "sha256:" HEX64 },
	{ "gcr.io/p/img:v1@sha256:" HEX64, "gcr.io", "p/img", "v1", "sha256:" HEX64 },
	{ "img@sha512:" HEX64 HEX64, "", "img", "", "sha512:" HEX64 HEX64 },
	{ "img@sha256+b64u.x-y_z:" HEX32, "", "img", "", "sha256+b64u.x-y_z:" HEX32 },
	{ "[::1]:5000/img:tag", "[::1]:5000", "img", "tag", "" },
	{ "[2001:db8::1]/team/img", "[2001:db8::1]", "team/img", "", "" },
	{ "My-Registry.Example.COM/img", "My-Registry.Example.COM", "img", "", "" },
	{ "10.0.0.1:5000/a/b/c/d/e/f", "10.0.0.1:5000", "a/b/c/d/e/f", "", "" },
	{ "a.b-c/f", "a.b-c", "f", "", "" },	/* the grammar reads a domain first */
	{ "a.b_c__d---e/f", "", "a.b_c__d---e/f", "", "" },	/* no domain has a "_" */
	{ "a.b_c__d---e", "", "a.b_c__d---e", "", "" },
	{ "foo:5000", "", "foo", "5000", "" },		/* a name and a tag, as docker reads it */
	{ "img:_tag", "", "img", "_tag", "" },
	{ "img:TAG.1-x", "", "img", "TAG.1-x", "" },
	{ "docker:24-dind", "", "docker", "24-dind", "" },	/* podman: a registry image */
	{ HEX64, "", HEX64, "", "" },				/* an image id */
	{ "pytorch-xla/tpu:r2.1", "pytorch-xla", "tpu", "r2.1", "" },
};

struct invalid_case {
	const char *ref, *why;	/* why: a substring of the reason */
};

static const struct invalid_case invalid[] = {
	{ "", "empty" },
	/* engine options: the escape of issue 12 */
	{ "--volume=/:/host", "starts with \"-\"" },
	{ "--volume=/tmp/x:/host", "starts with \"-\"" },
	{ "--privileged", "starts with \"-\"" },
	{ "-v", "starts with \"-\"" },
	{ "--mount=type=bind,source=/,target=/host", "starts with \"-\"" },
	{ "-x.example.com/img", "starts with \"-\"" },
	/* whitespace, control and non-ASCII characters */
	{ " busybox", "whitespace" },
	{ "busybox ", "whitespace" },
	{ "bus box", "whitespace" },
	{ "busybox\n--privileged", "whitespace" },
	{ "busybox\t", "whitespace" },
	{ "busybox\x1b[2J", "control" },
	{ "busybox\x7f", "control" },
	{ "caf\xc3\xa9", "non-ASCII" },
	{ "img;rm -rf /", "whitespace" },
	/* upper case */
	{ "Busybox", "must be lowercase" },
	{ "docker.io/Library/busybox:1", "must be lowercase" },
	/* tags */
	{ "busybox:", "the tag" },
	{ "busybox:.x", "the tag" },
	{ "busybox:-x", "the tag" },
	{ "busybox:a/b", "is not [registry" },	/* a ':' before the last '/' is no tag */
	{ "busybox:a+b", "the tag" },
	/* digests */
	{ "busybox@", "digest" },
	{ "busybox@sha256:abc", "digest" },
	{ "busybox@sha256:" HEX32 "g", "digest" },
	{ "busybox@256:" HEX64, "digest" },
	{ "busybox@sha256" HEX64, "digest" },
	{ "busybox@sha256:" HEX64 "@x", "digest" },
	{ "busybox@sha256--x:" HEX64, "digest" },
	/* names */
	{ ":tag", "the image name is missing" },
	{ "@sha256:" HEX64, "the image name is missing" },
	{ "a//b", "is not [registry" },
	{ "/busybox", "is not [registry" },
	{ "busybox/", "is not [registry" },
	{ "a..b", "is not [registry" },
	{ "a___b", "is not [registry" },
	{ "a-", "is not [registry" },
	{ "_a", "is not [registry" },
	{ ".a", "is not [registry" },
	{ "$(id)", "is not [registry" },
	{ "img`id`", "is not [registry" },
	{ "localhost:abc/img", "is not [registry" },
	{ "localhost:/img", "is not [registry" },
	{ "[::1/img", "is not [registry" },
	{ "[]/img", "is not [registry" },
	{ "host-.com/img", "is not [registry" },
	{ "a:b:c", "is not [registry" },
	/* podman transports: valid references podman reads from the node's files */
	{ "dir:foo", "podman transport" },
	{ "oci:layout", "podman transport" },
	{ "oci-archive:img.tar", "podman transport" },
	{ "docker-archive:img.tar", "podman transport" },
	{ "docker-archive:x@sha256:" HEX64, "podman transport" },
	{ "dir:5000/x", "podman transport" },
	{ "sif:x", "podman transport" },
	{ "tarball:x", "podman transport" },
	{ "ostree:x", "podman transport" },
	{ "docker-daemon:x@sha256:" HEX64, "podman transport" },
	{ "containers-storage:foo", "podman transport" },
};

static char *span(const char *s, size_t off, size_t len)
{
	return xstrndup(s + off, len);
}

static void imageref__valid_references_parse_into_their_parts(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(valid); i++) {
		const struct valid_case *c = &valid[i];
		struct imageref r;
		const char *why = imageref_parse(c->ref, &r);
		if (why)
			fail_msg("\"%s\" refused: %s", c->ref, why);
		char *domain = span(c->ref, 0, r.domain_len);
		char *path = span(c->ref, r.path_off, r.path_len);
		char *tag = span(c->ref, r.tag_off, r.tag_len);
		char *digest = span(c->ref, r.digest_off, r.digest_len);
		if (strcmp(domain, c->domain) || strcmp(path, c->path) || strcmp(tag, c->tag) ||
		    strcmp(digest, c->digest))
			fail_msg("\"%s\": domain \"%s\" path \"%s\" tag \"%s\" digest \"%s\"", c->ref,
				 domain, path, tag, digest);
		free(domain);
		free(path);
		free(tag);
		free(digest);
	}
}

static void imageref__invalid_references_are_refused_saying_why(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(invalid); i++) {
		const struct invalid_case *c = &invalid[i];
		struct imageref r = { 7, 7, 7, 7, 7, 7, 7 };
		const char *why = imageref_parse(c->ref, &r);
		if (!why)
			fail_msg("\"%s\" accepted", c->ref);
		if (!strstr(why, c->why))
			fail_msg("\"%s\": reason \"%s\" does not say \"%s\"", c->ref, why, c->why);
		assert_int_equal(r.domain_len, 7);	/* untouched */
	}
	assert_non_null(strstr(imageref_parse(NULL, NULL), "empty"));
}

static char *repeat(char c, size_t n)
{
	char *s = xmalloc(n + 1);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static void imageref__length_limits(void **state)
{
	(void)state;
	/* The name: 255 characters at most, a domain included. */
	char *name = repeat('a', IMAGEREF_NAME_MAX);
	assert_null(imageref_parse(name, NULL));
	char *ref = xasprintf("%s:tag", name);
	assert_null(imageref_parse(ref, NULL));
	free(ref);
	ref = xasprintf("%sa", name);
	assert_non_null(strstr(imageref_parse(ref, NULL), "longer than 255"));
	free(ref);
	ref = xasprintf("example.com/%s", name + 12);
	assert_int_equal(strlen(ref), IMAGEREF_NAME_MAX);
	assert_null(imageref_parse(ref, NULL));
	free(ref);
	ref = xasprintf("example.com/%s", name + 11);
	assert_non_null(strstr(imageref_parse(ref, NULL), "longer than 255"));
	free(ref);

	/* The tag: 128 characters at most. */
	char *tag = repeat('t', IMAGEREF_TAG_MAX);
	ref = xasprintf("img:%s", tag);
	assert_null(imageref_parse(ref, NULL));
	free(ref);
	ref = xasprintf("img:%st", tag);
	assert_non_null(strstr(imageref_parse(ref, NULL), "the tag"));
	free(ref);

	/* The whole: 1024 characters at most (the digest is unbounded). */
	char *hex = repeat('f', IMAGEREF_MAX);
	ref = xasprintf("%s:%s@sha256:%s", name, tag, hex);
	ref[IMAGEREF_MAX] = '\0';
	assert_null(imageref_parse(ref, NULL));
	free(ref);
	ref = xasprintf("%s:%s@sha256:%s", name, tag, hex);
	ref[IMAGEREF_MAX + 1] = '\0';
	assert_non_null(strstr(imageref_parse(ref, NULL), "longer than 1024"));
	free(ref);
	free(hex);
	free(tag);
	free(name);
}

static void env_names__c_identifiers_only(void **state)
{
	(void)state;
	const char *good[] = { "A", "_", "TF_CONFIG", "a1", "_x_9", "AIP_MODEL_DIR" };
	const char *bad[] = { "", "1A", "A-B", "A=B", "TRAINPLANE*", "A B", "A\n", "caf\xc3\xa9",
			      "--privileged", "-e", "A.B" };
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		if (!env_name_valid(good[i]))
			fail_msg("\"%s\" refused", good[i]);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (env_name_valid(bad[i]))
			fail_msg("\"%s\" accepted", bad[i]);
	assert_false(env_name_valid(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(imageref__valid_references_parse_into_their_parts),
		cmocka_unit_test(imageref__invalid_references_are_refused_saying_why),
		cmocka_unit_test(imageref__length_limits),
		cmocka_unit_test(env_names__c_identifiers_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
