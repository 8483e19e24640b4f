#include "http_parse.h"

#include <string.h>
#include <strings.h>

/* RFC 9110 tchar: the characters of a method or a field name. */
static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* RFC 3986 unreserved and sub-delims: a reg-name's characters besides "%HH". */
static bool is_regname_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("-._~!$&'()*+,;=", c));
}

/* A control character (HTAB aside) or DEL: never in a field value or a trailer. */
static bool is_ctl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int fail(struct http_perror *err, int status, const char *message)
{
	err->status = status;
	err->message = message;
	return -1;
}

long http_head_end(const char *buf, size_t len, struct http_head_scan *s,
		   struct http_perror *err)
{
	for (size_t i = s->pos; i < len; i++) {
		char c = buf[i];
		/* Every byte counts, CR and LF included: the head's end must be
		 * found within the limits or the head is refused. */
		if (s->line == 0 && i >= HTTP_MAX_REQUEST_LINE)
			return fail(err, 414, "The request line is too long.");
		if (i >= HTTP_MAX_HEAD)
			return fail(err, 431, "The request head is too large.");
		if (c == '\n')
			return fail(err, 400, "A line of the request head ends in a bare LF (CRLF is "
				    "required).");
		if (c != '\r')
			continue;
		if (i + 1 == len) {
			s->pos = i;	/* look at this CR again with the next byte */
			return 0;
		}
		if (buf[i + 1] != '\n')
			return fail(err, 400, "A line of the request head has a bare CR.");
		if (i == s->line) {
			if (s->line == 0)
				return fail(err, 400, "The request line is empty.");
			return (long)(i + 2);
		}
		i++;
		s->line = i + 1;
	}
	s->pos = len;
	return 0;
}

/* --- hosts (RFC 3986 3.2.2) ------------------------------------------------ */

/* RFC 3986 IPv4address: four dec-octets (0 to 255, no leading zero). */
static bool is_ipv4(const char *s, size_t n)
{
	size_t i = 0;

	for (int part = 0; part < 4; part++) {
		if (part && (i == n || s[i++] != '.'))
			return false;
		size_t start = i;
		unsigned v = 0;
		while (i < n && i - start < 3 && s[i] >= '0' && s[i] <= '9')
			v = v * 10 + (unsigned)(s[i++] - '0');
		if (i == start || v > 255 || (s[start] == '0' && i - start > 1))
			return false;
	}
	return i == n;
}

/*
 * RFC 3986 IPv6address: eight groups of 1 to 4 hex digits, the last two
 * of which may be an IPv4 address, with one "::" standing for one or more
 * groups of zeros. (No zone id: RFC 6874's "%25eth0" means nothing to
 * another host, and a Host field never carries one.)
 */
static bool is_ipv6(const char *s, size_t n)
{
	size_t i = 0;
	int groups = 0;
	bool gap = false;

	if (n >= 2 && s[0] == ':' && s[1] == ':') {
		gap = true;
		i = 2;
		if (i == n)
			return true;
	}
	for (;;) {
		size_t start = i;
		while (i < n && i - start < 5 && hexval(s[i]) >= 0)
			i++;
		if (i < n && s[i] == '.') {
			/* the IPv4 address is the rest of it */
			if (!is_ipv4(s + start, n - start))
				return false;
			groups += 2;
			break;
		}
		if (i == start || i - start > 4)
			return false;
		groups++;
		if (i == n)
			break;
		if (s[i++] != ':' || i == n)
			return false;
		if (s[i] == ':') {
			if (gap)
				return false;
			gap = true;
			if (++i == n)
				break;
		}
	}
	return gap ? groups < 8 : groups == 8;
}

/* RFC 3986 IPvFuture: "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ). */
static bool is_ipvfuture(const char *s, size_t n)
{
	size_t i = 1;

	if (n < 4 || (s[0] | 0x20) != 'v')
		return false;
	while (i < n && hexval(s[i]) >= 0)
		i++;
	if (i == 1 || i + 1 >= n || s[i++] != '.')
		return false;
	for (; i < n; i++)
		if (s[i] != ':' && !is_regname_char((unsigned char)s[i]))
			return false;
	return true;
}

enum authority_fault { AUTH_OK, AUTH_EMPTY, AUTH_USERINFO, AUTH_MALFORMED };

/*
 * Checks s[0..n) as uri-host [":" port] (RFC 9112 3.2, the Host field and
 * the authority of an absolute-form target): an IP-literal in brackets,
 * or a reg-name (an IPv4 address is one too) of unreserved characters,
 * sub-delims and "%HH"; then optionally a colon and digits (port = *DIGIT:
 * "host:" is valid). The host may not be empty: an "http" URI with an empty
 * host is invalid (RFC 9110 4.2.1), and nginx refuses an empty Host too.
 */
static enum authority_fault check_authority(const char *s, size_t n)
{
	size_t i = 0;

	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close)
			goto malformed;
		size_t len = (size_t)(close - s) - 1;
		if (!is_ipv6(s + 1, len) && !is_ipvfuture(s + 1, len))
			goto malformed;
		i = len + 2;
	} else {
		for (; i < n && s[i] != ':'; i++) {
			if (s[i] == '%') {
				if (n - i < 3 || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0)
					goto malformed;
				i += 2;
			} else if (!is_regname_char((unsigned char)s[i])) {
				goto malformed;
			}
		}
		if (i == 0)
			return AUTH_EMPTY;
	}
	if (i < n && s[i++] != ':')
		goto malformed;
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			goto malformed;
	return AUTH_OK;
malformed:
	/* "user@host", "user:pass@host": said as such, the usual mistake */
	return memchr(s, '@', n) ? AUTH_USERINFO : AUTH_MALFORMED;
}

static int check_host(const char *v, struct http_perror *err)
{
	switch (check_authority(v, strlen(v))) {
	case AUTH_OK:
		return 0;
	case AUTH_EMPTY:
		return fail(err, 400, "The Host header names no host.");
	case AUTH_USERINFO:
		return fail(err, 400, "The Host header has userinfo (\"user@\"), which is not allowed.");
	case AUTH_MALFORMED:
		break;
	}
	return fail(err, 400, "The Host header is malformed: it must be a host name, an IPv4 address or an "
		    "IPv6 address in brackets, then optionally a colon and a port number.");
}

/* --- the request line --------------------------------------------------------- */

/*
 * The request target's form (RFC 9112 3.2): origin-form ("/p?q"),
 * absolute-form ("http://host/p", the authority checked as a Host value is),
 * or asterisk-form ("*", for OPTIONS only). authority-form belongs to
 * CONNECT, which only a proxy serves. A fragment is never sent (RFC 9112
 * 3.2: the target is the URI without it): a "#" is refused rather than read
 * as part of the path.
 */
static int check_target(const struct http_head *h, struct http_perror *err)
{
	const char *t = h->target;

	if (strchr(t, '#'))
		return fail(err, 400, "The request target has a fragment (\"#\"), which is never sent in a "
			    "request.");
	if (t[0] == '/')
		return 0;
	if (t[0] == '*' && !t[1]) {
		if (strcmp(h->method, "OPTIONS"))
			return fail(err, 400, "The request target \"*\" (asterisk-form) is allowed only with "
				    "OPTIONS.");
		return 0;
	}
	size_t scheme = !strncasecmp(t, "http://", 7) ? 7 : !strncasecmp(t, "https://", 8) ? 8 : 0;
	if (!scheme)
		return fail(err, 400, "The request target is neither a path nor an absolute http(s) URL.");
	t += scheme;
	switch (check_authority(t, strcspn(t, "/?"))) {
	case AUTH_OK:
		return 0;
	case AUTH_EMPTY:
		return fail(err, 400, "The request target's URL names no host.");
	case AUTH_USERINFO:
		return fail(err, 400, "The request target's URL has userinfo (\"user@\"), which is not allowed.");
	case AUTH_MALFORMED:
		break;
	}
	return fail(err, 400, "The request target's URL has a malformed host or port.");
}

/*
 * The request line line[0..end): method SP request-target SP HTTP-version.
 * Its bytes are checked up to end, not up to a NUL: "HTTP/1.1\0junk" is no
 * version.
 */
static int parse_request_line(char *line, const char *end, struct http_head *h,
			      struct http_perror *err)
{
	char *p = line;

	h->method = p;
	while (is_tchar((unsigned char)*p))
		p++;
	if (p == line || *p != ' ' || p - line > 32)
		return fail(err, 400, "The request line is malformed (method).");
	*p++ = '\0';
	h->target = p;
	while ((unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f)
		p++;
	if (p == h->target)
		return fail(err, 400, "The request line is malformed (request target).");
	if (p == end)
		return fail(err, 400, "The request line is malformed (no HTTP version).");
	if (*p != ' ')
		return fail(err, 400, "The request target has a character that is not allowed "
			    "(a control character, a space or a byte that is not ASCII).");
	*p++ = '\0';
	if (end - p != 8 || strncmp(p, "HTTP/", 5) || p[5] < '0' || p[5] > '9' || p[6] != '.' ||
	    p[7] < '0' || p[7] > '9')
		return fail(err, 400, "The request line is malformed (HTTP version).");
	if (p[5] != '1')
		return fail(err, 505, "The HTTP version is not supported: use HTTP/1.1.");
	h->minor = p[7] == '0' ? 0 : 1;
	return 0;
}

/* One Content-Length value: "42" or a list of the same value ("42, 42"). */
static int parse_content_length(const char *v, uint64_t *out, bool *seen,
				struct http_perror *err)
{
	for (;;) {
		uint64_t n = 0;
		const char *start = v;
		while (*v >= '0' && *v <= '9') {
			n = n > UINT64_MAX / 10 - 1 ? UINT64_MAX : n * 10 + (uint64_t)(*v - '0');
			v++;
		}
		if (v == start)
			return fail(err, 400, "The Content-Length header is malformed.");
		if (*seen && n != *out)
			return fail(err, 400, "The request has conflicting Content-Length values.");
		*out = n;
		*seen = true;
		while (is_ows(*v))
			v++;
		if (!*v)
			return 0;
		if (*v++ != ',')
			return fail(err, 400, "The Content-Length header is malformed.");
		while (is_ows(*v))
			v++;
	}
}

/* The transfer codings of a request, as far as framing cares. */
struct codings {
	int count;		/* codings named in all Transfer-Encoding fields */
	int chunked;		/* how many of them are chunked */
	bool last_chunked;	/* the final one is chunked */
};

static void add_codings(const char *v, struct codings *c)
{
	while (*v) {
		while (is_ows(*v) || *v == ',')
			v++;
		if (!*v)
			break;
		const char *start = v;
		while (*v && *v != ',')
			v++;
		const char *end = v;
		while (end > start && is_ows(end[-1]))
			end--;
		size_t n = (size_t)(end - start);
		bool chunked = n == 7 && !strncasecmp(start, "chunked", 7);
		c->count++;
		c->chunked += chunked;
		c->last_chunked = chunked;
	}
}

/* Whether a comma-separated field value lists token (without case). */
static bool lists_token(const char *v, const char *token)
{
	size_t n = strlen(token);
	while (*v) {
		while (is_ows(*v) || *v == ',')
			v++;
		const char *start = v;
		while (*v && *v != ',' && !is_ows(*v))
			v++;
		if ((size_t)(v - start) == n && !strncasecmp(start, token, n))
			return true;
		while (*v && *v != ',')
			v++;
	}
	return false;
}

/* Decides the body's framing and the connection's fate from the fields. */
static int check_framing(struct http_head *h, struct http_perror *err)
{
	struct codings tc = { 0 };
	bool have_length = false, close = false, keep = false;
	int hosts = 0;
	const char *expect = NULL;

	for (size_t i = 0; i < h->nfields; i++) {
		const char *name = h->fields[i].name, *value = h->fields[i].value;
		if (!strcasecmp(name, "content-length")) {
			if (parse_content_length(value, &h->content_length, &have_length, err))
				return -1;
		} else if (!strcasecmp(name, "transfer-encoding")) {
			int before = tc.count;
			add_codings(value, &tc);
			/* "", "," ...: a Transfer-Encoding that names no coding is
			 * still one (a proxy may take it for chunked). */
			if (tc.count == before)
				return fail(err, 400, "The Transfer-Encoding header names no coding.");
			/* "chunked,": a parser that takes the empty element after
			 * chunked for the final coding frames the body otherwise
			 * (llhttp refuses it too). An empty element before a
			 * coding (", chunked") is harmless and allowed (RFC 9110
			 * 5.6.1). */
			if (value[strlen(value) - 1] == ',')
				return fail(err, 400, "The Transfer-Encoding header ends in an empty list element "
					    "(a trailing comma).");
		} else if (!strcasecmp(name, "host")) {
			if (++hosts > 1)
				return fail(err, 400, "The request has more than one Host header.");
			if (check_host(value, err))
				return -1;
		} else if (!strcasecmp(name, "connection")) {
			close |= lists_token(value, "close");
			keep |= lists_token(value, "keep-alive");
		} else if (!strcasecmp(name, "expect")) {
			expect = value;
		}
	}
	if (tc.count) {
		if (h->minor == 0)
			return fail(err, 400, "Transfer-Encoding is not allowed in an HTTP/1.0 request.");
		if (have_length)
			return fail(err, 400, "The request has both Content-Length and "
				    "Transfer-Encoding.");
		if (!tc.last_chunked || tc.chunked > 1)
			return fail(err, 400, "The request's transfer coding is not supported: "
				    "chunked must be the only one.");
		if (tc.count > 1)
			return fail(err, 501, "The request's transfer coding is not implemented: "
				    "chunked must be the only one.");
		h->body = HTTP_BODY_CHUNKED;
	} else if (have_length && h->content_length > 0) {
		h->body = HTTP_BODY_LENGTH;
	} else {
		h->body = HTTP_BODY_NONE;
	}
	/* RFC 9112 3.2: HTTP/1.0 may leave Host out, HTTP/1.1 may not. */
	if (h->minor >= 1 && !hosts)
		return fail(err, 400, "An HTTP/1.1 request needs a Host header.");
	h->keep_alive = h->minor >= 1 ? !close : keep && !close;
	if (expect) {
		if (strcasecmp(expect, "100-continue"))
			return fail(err, 417, "The expectation in the Expect header is not supported.");
		h->expect_continue = h->minor >= 1;
	}
	return 0;
}

int http_head_parse(char *head, size_t len, struct http_head *h, struct http_perror *err)
{
	char *end = head + len, *p = head, *eol;

	memset(h, 0, sizeof(*h));
	if (len < 4 || memcmp(end - 4, "\r\n\r\n", 4))
		return fail(err, 400, "The request head is incomplete.");
	eol = memchr(p, '\r', (size_t)(end - p));
	if (eol[1] != '\n')
		return fail(err, 400, "A line of the request head has a bare CR.");
	*eol = '\0';
	if (parse_request_line(p, eol, h, err) || check_target(h, err))
		return -1;
	p = eol + 2;
	while (p < end - 2) {
		eol = memchr(p, '\r', (size_t)(end - p));
		if (eol[1] != '\n')
			return fail(err, 400, "A line of the request head has a bare CR.");
		*eol = '\0';
		if (is_ows(*p))
			return fail(err, 400, "The request head has a folded line (obs-fold).");
		char *name = p;
		while (is_tchar((unsigned char)*p))
			p++;
		if (p == name || *p != ':')
			return fail(err, 400, "A header field of the request is malformed (its name, "
				    "or whitespace before the colon).");
		*p++ = '\0';
		while (is_ows(*p))
			p++;
		char *value = p;
		for (; p < eol; p++) {
			if (is_ctl((unsigned char)*p))
				return fail(err, 400, "A header field value of the request has a control "
					    "character.");
		}
		while (p > value && is_ows(p[-1]))
			p--;
		*p = '\0';
		if (h->nfields == HTTP_MAX_HEADERS)
			return fail(err, 431, "The request has too many header fields.");
		h->fields[h->nfields].name = name;
		h->fields[h->nfields].value = value;
		h->nfields++;
		p = eol + 2;
	}
	return check_framing(h, err);
}

const char *http_head_field(const struct http_head *h, const char *name)
{
	for (size_t i = 0; i < h->nfields; i++)
		if (!strcasecmp(h->fields[i].name, name))
			return h->fields[i].value;
	return NULL;
}

/* --- chunked bodies ------------------------------------------------------ */

/*
 * The decoder's states, in the order of a body's bytes. A size line is
 * chunk-size [ chunk-ext ] CRLF (RFC 9112 7.1.1), its extensions
 *     *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
 * with a token for a name and a token or quoted-string for a value; they
 * are checked and discarded. The trailer section is *( field-line CRLF )
 * CRLF (RFC 9112 7.1.2), its lines checked as the head's and discarded.
 * The states up to CK_SIZE_LF are the size line's, those from CK_TRAILER
 * the trailer's: each byte of them counts against its limit, CRLFs too.
 */
enum {
	CK_SIZE,		/* hex digits of the chunk size */
	CK_SIZE_WS,		/* BWS after the size or a value: ";" must follow */
	CK_EXT,			/* after ";": BWS, then an extension's name */
	CK_EXT_NAME,
	CK_EXT_NAME_WS,		/* BWS after a name: "=" or ";" must follow */
	CK_EXT_EQ,		/* after "=": BWS, then the value */
	CK_EXT_TOKEN,		/* a token value */
	CK_EXT_QUOTED,		/* a quoted-string value, within the quotes */
	CK_EXT_QPAIR,		/* after a backslash in it */
	CK_EXT_QEND,		/* after its closing quote */
	CK_SIZE_LF,		/* the LF of the size line */
	CK_DATA,
	CK_DATA_CR,
	CK_DATA_LF,
	CK_TRAILER,		/* the start of a trailer line, or the final CRLF */
	CK_TRAILER_NAME,
	CK_TRAILER_VALUE,
	CK_TRAILER_LF,
	CK_END_LF,
	CK_DONE,
};

/* A size line (extensions, leading zeros, CRLF) longer than this is 400. */
#define CHUNK_LINE_MAX 4096
/* A trailer section (its lines and the final CRLF) longer than this is 431. */
#define TRAILER_MAX 8192

static int bad_size(struct http_perror *err)
{
	return fail(err, 400, "The chunked request body is malformed (chunk size).");
}

static int bad_ext(struct http_perror *err)
{
	return fail(err, 400, "The chunked request body is malformed: after a chunk size only extensions "
		    "may follow, each \";name\" or \";name=value\" (a token or a quoted string), with "
		    "whitespace only before \";\" and around \"=\".");
}

int http_chunked_feed(struct http_chunked *c, const char *in, size_t len, size_t *used,
		      struct strbuf *out, size_t max_body, struct http_perror *err)
{
	size_t i = 0;

	while (i < len && c->state != CK_DONE) {
		char ch = in[i];
		if (c->state <= CK_SIZE_LF) {
			if (++c->line > CHUNK_LINE_MAX)
				return fail(err, 400, "A chunk size line of the request (its extensions) is too "
					    "long.");
		} else if (c->state >= CK_TRAILER) {
			if (++c->trailer > TRAILER_MAX)
				return fail(err, 431, "The request's trailer fields are too large.");
		}
		switch (c->state) {
		case CK_SIZE: {
			int v = hexval(ch);
			if (v >= 0) {
				/* Leading zeros are read by value: only the
				 * significant digits count toward the 64 bits. */
				if (c->remaining || v) {
					if (++c->digits > 16 || c->remaining > (max_body - out->len) >> 4)
						return fail(err, 413, NULL);
					c->remaining = c->remaining << 4 | (uint64_t)v;
				}
				break;
			}
			if (c->line == 1)	/* this byte is the line's first: no digit */
				return bad_size(err);
			if (ch == ';')
				c->state = CK_EXT;
			else if (is_ows(ch))
				c->state = CK_SIZE_WS;
			else if (ch == '\r')
				c->state = CK_SIZE_LF;
			else
				return bad_size(err);
			break;
		}
		case CK_SIZE_WS:
			if (ch == ';')
				c->state = CK_EXT;
			else if (!is_ows(ch))
				return bad_ext(err);
			break;
		case CK_EXT:
			if (is_tchar((unsigned char)ch))
				c->state = CK_EXT_NAME;
			else if (!is_ows(ch))
				return fail(err, 400, "The chunked request body is malformed: a chunk extension "
					    "has no name.");
			break;
		case CK_EXT_NAME:
			if (ch == '=')
				c->state = CK_EXT_EQ;
			else if (ch == ';')
				c->state = CK_EXT;
			else if (ch == '\r')
				c->state = CK_SIZE_LF;
			else if (is_ows(ch))
				c->state = CK_EXT_NAME_WS;
			else if (!is_tchar((unsigned char)ch))
				return bad_ext(err);
			break;
		case CK_EXT_NAME_WS:
			if (ch == '=')
				c->state = CK_EXT_EQ;
			else if (ch == ';')
				c->state = CK_EXT;
			else if (!is_ows(ch))
				return bad_ext(err);
			break;
		case CK_EXT_EQ:
			if (ch == '"')
				c->state = CK_EXT_QUOTED;
			else if (is_tchar((unsigned char)ch))
				c->state = CK_EXT_TOKEN;
			else if (!is_ows(ch))
				return fail(err, 400, "The chunked request body is malformed: a chunk extension "
					    "has \"=\" but no value.");
			break;
		case CK_EXT_TOKEN:
			if (ch == ';')
				c->state = CK_EXT;
			else if (ch == '\r')
				c->state = CK_SIZE_LF;
			else if (is_ows(ch))
				c->state = CK_SIZE_WS;
			else if (!is_tchar((unsigned char)ch))
				return bad_ext(err);
			break;
		case CK_EXT_QUOTED:
			/* qdtext: HTAB, SP, VCHAR but '"' and '\', obs-text */
			if (ch == '"')
				c->state = CK_EXT_QEND;
			else if (ch == '\\')
				c->state = CK_EXT_QPAIR;
			else if (is_ctl((unsigned char)ch))
				return fail(err, 400, "The chunked request body is malformed: a quoted chunk "
					    "extension value is not closed, or has a control character.");
			break;
		case CK_EXT_QPAIR:
			if (is_ctl((unsigned char)ch))
				return fail(err, 400, "The chunked request body is malformed: a quoted chunk "
					    "extension value has a control character.");
			c->state = CK_EXT_QUOTED;
			break;
		case CK_EXT_QEND:
			if (ch == ';')
				c->state = CK_EXT;
			else if (ch == '\r')
				c->state = CK_SIZE_LF;
			else if (is_ows(ch))
				c->state = CK_SIZE_WS;
			else
				return bad_ext(err);
			break;
		case CK_SIZE_LF:
			if (ch != '\n')
				return fail(err, 400, "The chunked request body is malformed (bare CR).");
			if (c->remaining > max_body - out->len)
				return fail(err, 413, NULL);
			c->state = c->remaining ? CK_DATA : CK_TRAILER;
			c->line = 0;
			break;
		case CK_DATA: {
			size_t n = len - i < c->remaining ? len - i : (size_t)c->remaining;
			sb_add(out, in + i, n);
			c->remaining -= n;
			i += n;
			if (!c->remaining)
				c->state = CK_DATA_CR;
			continue;
		}
		case CK_DATA_CR:
		case CK_DATA_LF:
			if (ch != (c->state == CK_DATA_CR ? '\r' : '\n'))
				return fail(err, 400, "The chunked request body is malformed (a chunk is "
					    "longer than its size).");
			if (c->state == CK_DATA_LF) {
				c->state = CK_SIZE;
				c->digits = 0;
				c->remaining = 0;
				c->line = 0;
			} else {
				c->state = CK_DATA_LF;
			}
			break;
		case CK_TRAILER:
			if (ch == '\r')
				c->state = CK_END_LF;
			else if (is_tchar((unsigned char)ch))
				c->state = CK_TRAILER_NAME;
			else if (is_ows(ch))
				return fail(err, 400, "The chunked request body has a folded trailer line "
					    "(obs-fold).");
			else
				return fail(err, 400, "A trailer field of the request is malformed (its name).");
			break;
		case CK_TRAILER_NAME:
			if (ch == ':')
				c->state = CK_TRAILER_VALUE;
			else if (!is_tchar((unsigned char)ch))
				return fail(err, 400, "A trailer field of the request is malformed (its name, "
					    "or whitespace before the colon).");
			break;
		case CK_TRAILER_VALUE:
			if (ch == '\r')
				c->state = CK_TRAILER_LF;
			else if (is_ctl((unsigned char)ch))
				return fail(err, 400, "A trailer field value of the request has a control "
					    "character.");
			break;
		case CK_TRAILER_LF:
		case CK_END_LF:
			if (ch != '\n')
				return fail(err, 400, "The chunked request body is malformed (bare CR).");
			c->state = c->state == CK_END_LF ? CK_DONE : CK_TRAILER;
			break;
		}
		i++;
	}
	*used = i;
	return c->state == CK_DONE;
}

/* --- targets --------------------------------------------------------------- */

int http_target_split(char *target, char **path, char **query)
{
	char *p = target;

	if (!strncasecmp(p, "http://", 7) || !strncasecmp(p, "https://", 8)) {
		p += p[4] == ':' ? 7 : 8;
		p += strcspn(p, "/?");
		if (*p != '/') {
			/* "http://host" or "http://host?q": the path is "/". */
			char *q = *p == '?' ? p + 1 : NULL;
			size_t qlen = q ? strlen(q) : 0;
			target[0] = '/';
			if (q) {
				memmove(target + 2, q, qlen + 1);
				target[1] = '\0';
				*query = target + 2;
			} else {
				target[1] = '\0';
				*query = NULL;
			}
			*path = target;
			return 0;
		}
	} else if (*p != '/' && strcmp(p, "*")) {
		return -1;
	}
	*path = p;
	char *q = strchr(p, '?');
	if (q)
		*q++ = '\0';
	*query = q;
	return 0;
}

size_t http_unescape(char *s, bool plus)
{
	char *r = s, *w = s;

	while (*r) {
		int h1, h2;
		if (r[0] == '%' && (h1 = hexval(r[1])) >= 0 && (h2 = hexval(r[2])) >= 0 &&
		    (h1 || h2)) {
			*w++ = (char)(h1 << 4 | h2);
			r += 3;
		} else if (plus && *r == '+') {
			*w++ = ' ';
			r++;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}
