/*
 * imageref.c - image references and environment variable names (the
 * grammar is in imageref.h). A hand-written scanner, one function per
 * production; every span is bounded by its caller, nothing is copied except
 * for the lower-case retry that explains an upper-case name.
 */
#include "imageref.h"

#include <stdlib.h>
#include <string.h>

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool is_word(char c)
{
	return is_alnum(c) || c == '_';
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* path-comp := [a-z0-9]+ (separator [a-z0-9]+)*, separator := [_.] | "__" | "-"+ */
static bool path_component_ok(const char *s, size_t n)
{
	size_t i = 0;

	if (!n || !is_lower_alnum(s[0]))
		return false;
	while (i < n) {
		while (i < n && is_lower_alnum(s[i]))
			i++;
		if (i == n)
			return true;
		/* a separator, then at least one alphanumeric */
		if (s[i] == '.') {
			i++;
		} else if (s[i] == '_') {
			i += i + 1 < n && s[i + 1] == '_' ? 2 : 1;
		} else if (s[i] == '-') {
			while (i < n && s[i] == '-')
				i++;
		} else {
			return false;
		}
		if (i == n || !is_lower_alnum(s[i]))
			return false;
	}
	return true;
}

/* path := path-comp ("/" path-comp)* */
static bool path_ok(const char *s, size_t n)
{
	size_t start = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '/')
			continue;
		if (!path_component_ok(s + start, i - start))
			return false;
		start = i + 1;
	}
	return true;
}

/* domain-comp := [A-Za-z0-9] | [A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9] */
static bool domain_component_ok(const char *s, size_t n)
{
	if (!n || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

/* domain := (domain-name | "[" [0-9A-Fa-f:]+ "]") [":" [0-9]+] */
static bool domain_ok(const char *s, size_t n)
{
	size_t host = n, start = 0;

	if (n && s[0] == '[') {
		size_t i = 1;
		while (i < n && (is_hex(s[i]) || s[i] == ':'))
			i++;
		if (i == 1 || i == n || s[i] != ']')
			return false;
		host = i + 1;
	} else {
		const char *colon = memchr(s, ':', n);
		if (colon)
			host = (size_t)(colon - s);
		for (size_t i = 0; i <= host; i++) {
			if (i < host && s[i] != '.')
				continue;
			if (!domain_component_ok(s + start, i - start))
				return false;
			start = i + 1;
		}
	}
	if (host == n)
		return true;
	if (s[host] != ':' || host + 1 == n)
		return false;
	for (size_t i = host + 1; i < n; i++)
		if (!is_digit(s[i]))
			return false;
	return true;
}

/* tag := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} */
static bool tag_ok(const char *s, size_t n)
{
	if (!n || n > IMAGEREF_TAG_MAX || !is_word(s[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!is_word(s[i]) && s[i] != '.' && s[i] != '-')
			return false;
	return true;
}

/* digest := alg-comp ([-_+.] alg-comp)* ":" [0-9A-Fa-f]{32,}, alg-comp := [A-Za-z][A-Za-z0-9]* */
static bool digest_ok(const char *s, size_t n)
{
	size_t i = 0;

	for (;;) {
		if (i == n || !((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return false;
		while (i < n && is_alnum(s[i]))
			i++;
		if (i < n && (s[i] == '-' || s[i] == '_' || s[i] == '+' || s[i] == '.')) {
			i++;
			continue;
		}
		break;
	}
	if (i == n || s[i] != ':')
		return false;
	if (n - i - 1 < IMAGEREF_DIGEST_HEX_MIN)
		return false;
	for (i++; i < n; i++)
		if (!is_hex(s[i]))
			return false;
	return true;
}

/* name := [domain "/"] path; *domain_len is set when the first part is a domain. */
static bool name_ok(const char *s, size_t n, size_t *domain_len)
{
	const char *slash = memchr(s, '/', n);

	if (slash) {
		size_t d = (size_t)(slash - s);
		if (domain_ok(s, d) && path_ok(slash + 1, n - d - 1)) {
			*domain_len = d;
			return true;
		}
	}
	*domain_len = 0;
	return path_ok(s, n);
}

/* An upper-case letter makes the name invalid; would the lower-case one be valid? */
static bool valid_once_lowercase(const char *s, size_t n)
{
	char *low = xstrndup(s, n);
	size_t domain_len;
	bool any_upper = false;

	for (size_t i = 0; i < n; i++) {
		if (low[i] >= 'A' && low[i] <= 'Z') {
			low[i] = (char)(low[i] - 'A' + 'a');
			any_upper = true;
		}
	}
	bool ok = any_upper && name_ok(low, n, &domain_len);
	free(low);
	return ok;
}

/* podman's transports (containers/image alltransports) but "docker". */
static const char *const transports[] = {
	"containers-storage", "dir", "docker-archive", "docker-daemon", "oci", "oci-archive",
	"ostree", "sif", "tarball",
};

static bool transport_prefix(const char *s)
{
	const char *colon = strchr(s, ':');

	if (!colon || memchr(s, '/', (size_t)(colon - s)))
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(transports); i++)
		if (strlen(transports[i]) == (size_t)(colon - s) &&
		    !memcmp(s, transports[i], (size_t)(colon - s)))
			return true;
	return false;
}

const char *imageref_parse(const char *s, struct imageref *out)
{
	struct imageref r = { 0 };
	size_t len = s ? strlen(s) : 0, name_end;
	const char *at;

	if (!len)
		return "it is empty";
	if (s[0] == '-')
		return "it starts with \"-\" as a command-line option does";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return "it contains whitespace, a control character or a non-ASCII character";
	if (len > IMAGEREF_MAX)
		return "it is longer than 1024 characters";

	at = strchr(s, '@');
	name_end = at ? (size_t)(at - s) : len;
	if (at) {
		r.digest_off = name_end + 1;
		r.digest_len = len - r.digest_off;
		if (!digest_ok(s + r.digest_off, r.digest_len))
			return "the digest after \"@\" is not algorithm:hex with at least 32 hex "
			       "digits (e.g. sha256: and 64 hex digits)";
	}
	/* The tag is after the last ':' that follows the last '/'. */
	for (size_t i = name_end; i > 0 && s[i - 1] != '/'; i--) {
		if (s[i - 1] != ':')
			continue;
		r.tag_off = i;
		r.tag_len = name_end - i;
		name_end = i - 1;
		if (!tag_ok(s + r.tag_off, r.tag_len))
			return "the tag is not 1 to 128 letters, digits, \"_\", \".\" or \"-\" "
			       "starting with a letter, a digit or \"_\"";
		break;
	}
	if (!name_end)
		return "the image name is missing";
	if (name_end > IMAGEREF_NAME_MAX)
		return "the image name (before any tag or digest) is longer than 255 characters";
	if (!name_ok(s, name_end, &r.domain_len)) {
		if (valid_once_lowercase(s, name_end))
			return "the repository path must be lowercase";
		return "it is not " IMAGEREF_FORM ": the path's components are lowercase letters "
		       "and digits, separated by \".\", \"_\", \"__\" or dashes, and joined by "
		       "\"/\"; a registry is a host name or [IPv6 address] with an optional "
		       ":port";
	}
	if (transport_prefix(s))
		return "it starts with a podman transport (dir:, oci:, oci-archive:, "
		       "docker-archive:, docker-daemon:, sif:, tarball:, ostree:, "
		       "containers-storage:), which reads an image from the node's own files";
	r.path_off = r.domain_len ? r.domain_len + 1 : 0;
	r.path_len = name_end - r.path_off;
	if (out)
		*out = r;
	return NULL;
}

bool env_name_valid(const char *name)
{
	if (!name || !((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') ||
		       name[0] == '_'))
		return false;
	for (const char *p = name + 1; *p; p++)
		if (!is_word(*p))
			return false;
	return true;
}
