/*
 * imageref.h - the user-supplied values that reach a container engine's
 * command line, checked before any engine sees them: image references and
 * environment variable names. The server refuses a bad one with 400
 * INVALID_ARGUMENT (server/validate.c); the agent checks again before it
 * builds `podman|docker run` (agent/runtime_container.c), so a value that
 * slipped past one cannot become an engine option at the other.
 *
 * An image reference follows docker's grammar (github.com/distribution/
 * reference, which podman's containers/image shares):
 *
 *   reference      := name [":" tag] ["@" digest]
 *   name           := [domain "/"] path                    (at most 255 chars)
 *   domain         := host [":" port]
 *   host           := domain-name | "[" ipv6 "]"           ipv6: [0-9A-Fa-f:]+
 *   domain-name    := domain-comp ("." domain-comp)*
 *   domain-comp    := [A-Za-z0-9] | [A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]
 *   port           := [0-9]+
 *   path           := path-comp ("/" path-comp)*
 *   path-comp      := [a-z0-9]+ (separator [a-z0-9]+)*
 *   separator      := [_.] | "__" | "-"+
 *   tag            := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
 *   digest         := algorithm ":" hex
 *   algorithm      := alg-comp ([-_+.] alg-comp)*          alg-comp: [A-Za-z][A-Za-z0-9]*
 *   hex            := [0-9A-Fa-f]{32,}
 *
 * So no reference starts with "-" or holds whitespace, a control or a
 * non-ASCII character. Two rules of ours on top:
 *   - at most IMAGEREF_MAX characters in all (the grammar bounds the name
 *     and the tag, not the digest);
 *   - no podman transport prefix: `dir:x`, `oci-archive:x`, `dir:5000/x`,
 *     ... are valid references, but podman reads them as "the image in the
 *     node's file ./x" (checked with podman 4.3). "docker:" stays allowed:
 *     podman reads `docker:24` as the image docker:24 on a registry.
 */
#ifndef TP_IMAGEREF_H
#define TP_IMAGEREF_H

#include <stdbool.h>

#include "common.h"

#define IMAGEREF_MAX 1024		/* ours: the whole reference */
#define IMAGEREF_NAME_MAX 255		/* the grammar's NameTotalLengthMax */
#define IMAGEREF_TAG_MAX 128
#define IMAGEREF_DIGEST_HEX_MIN 32

/* Where the parts of a valid reference lie in it (length 0: absent). */
struct imageref {
	size_t domain_len;		/* the domain starts at 0 */
	size_t path_off, path_len;
	size_t tag_off, tag_len;	/* without the ':' */
	size_t digest_off, digest_len;	/* without the '@' */
};

/*
 * Parses s (NUL-terminated; NULL reads as empty). Returns NULL when s is a
 * valid reference, filling out when it is not NULL; otherwise a static
 * description of what is wrong, a lower-case clause that can follow a colon
 * ("it starts with \"-\" as a command-line option does"), and out is
 * untouched. When "foo/bar" can be read both ways, the grammar's reading
 * (domain "foo") is the one reported.
 */
const char *imageref_parse(const char *s, struct imageref *out) MUST_CHECK;

/* An environment variable name as Vertex's EnvVar.name requires: a C
 * identifier, [A-Za-z_][A-Za-z0-9_]*. NULL is not one. */
bool env_name_valid(const char *name);

/* An example and the short form of the grammar, for error messages. */
#define IMAGEREF_FORM "[registry[:port]/]path[:tag][@digest]"
#define IMAGEREF_EXAMPLE "us-docker.pkg.dev/my-project/trainers/mnist:v2"

#endif
