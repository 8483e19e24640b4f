/*
 * schema_render_text.c - schema_render_text() (schema.h): a stored JSON
 * text rendered canonically straight from its bytes, without building a
 * tree. Every jobs.get that misses the job cache and every job of a
 * jobs.list goes through here, so it allocates nothing for a message of
 * a few dozen fields and reads each byte of the text a few times at most.
 *
 * It gives the bytes schema_render() gives for the same JSON read with
 * JSON_DECODE_INT_AS_REAL: both render through the same descriptors with
 * the same value rules (schema_render.c), which test_schema holds them to.
 */
#include "schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define MAX_DEPTH 64
#define LOCAL_MEMBERS 32

/* A span of the text: a value, or a string's contents between its quotes. */
struct span {
	const char *p;
	size_t n;
	bool escaped;		/* a string with a backslash in it */
};

struct member {
	struct span key;	/* the contents of the key string */
	struct span value;	/* the whole value */
};

static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int hex4(const char *p);

/*
 * A string token at p ('"'): its contents in *s; returns what follows,
 * NULL if malformed (as a JSON parser would refuse it: control characters,
 * unknown escapes, \u0000, a lone surrogate).
 */
static const char *scan_string(const char *p, const char *end, struct span *s)
{
	const char *q = p + 1;

	s->escaped = false;
	while (q < end && *q != '"') {
		if ((unsigned char)*q < 0x20)
			return NULL;
		if (*q != '\\') {
			q++;
			continue;
		}
		s->escaped = true;
		if (++q >= end || !strchr("\"\\/bfnrtu", *q))
			return NULL;
		if (*q++ != 'u')
			continue;
		int cp = end - q >= 4 ? hex4(q) : -1;
		if (cp <= 0 || (cp >= 0xdc00 && cp < 0xe000))
			return NULL;
		q += 4;
		if (cp >= 0xd800 && cp < 0xdc00) {
			int lo = end - q >= 6 && q[0] == '\\' && q[1] == 'u' ? hex4(q + 2) : -1;
			if (lo < 0xdc00 || lo > 0xdfff)
				return NULL;
			q += 6;
		}
	}
	if (q >= end)
		return NULL;
	s->p = p + 1;
	s->n = (size_t)(q - p - 1);
	return q + 1;
}

static const char *digits(const char *p, const char *end)
{
	const char *start = p;

	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p > start ? p : NULL;
}

/* A number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static const char *scan_number(const char *p, const char *end)
{
	const char *start = p;
	bool big = false;

	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if (!(p = digits(p, end)))
		return NULL;
	if (p < end && *p == '.' && !(p = digits(p + 1, end)))
		return NULL;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		p = digits(p, end);
		big = true;
	}
	if (p && (big || p - start > 300)) {
		/* Past a double's range the JSON parser refuses it too. */
		char *copy = xstrndup(start, (size_t)(p - start));
		bool finite = isfinite(strtod(copy, NULL));
		free(copy);
		if (!finite)
			return NULL;
	}
	return p;
}

/* Skips one value at p (after whitespace); *v its span. NULL if malformed. */
static const char *scan_value(const char *p, const char *end, struct span *v, int depth)
{
	struct span s;
	const char *start;

	p = ws(p, end);
	start = p;
	if (p >= end || depth > MAX_DEPTH)
		return NULL;
	switch (*p) {
	case '"':
		p = scan_string(p, end, &s);
		break;
	case '{':
	case '[': {
		char close = *p == '{' ? '}' : ']';
		p = ws(p + 1, end);
		if (p < end && *p == close) {
			p++;
			break;
		}
		for (;;) {
			if (close == '}') {
				p = ws(p, end);
				if (p >= end || *p != '"' || !(p = scan_string(p, end, &s)))
					return NULL;
				p = ws(p, end);
				if (p >= end || *p++ != ':')
					return NULL;
			}
			if (!(p = scan_value(p, end, &s, depth + 1)))
				return NULL;
			p = ws(p, end);
			if (p < end && *p == ',') {
				p++;
				continue;
			}
			if (p < end && *p == close) {
				p++;
				break;
			}
			return NULL;
		}
		break;
	}
	case 't':
		p = end - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
		break;
	case 'f':
		p = end - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
		break;
	case 'n':
		p = end - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
		break;
	default:
		p = scan_number(p, end);
	}
	if (!p)
		return NULL;
	v->p = start;
	v->n = (size_t)(p - start);
	v->escaped = false;
	return p;
}

/* The members of the object at span v, into *m (local, or allocated past LOCAL_MEMBERS). */
static int members_of(const struct span *v, struct member *local, struct member **m, size_t *n)
{
	const char *p = v->p + 1, *end = v->p + v->n;
	size_t cap = LOCAL_MEMBERS;

	*m = local;
	*n = 0;
	if (v->n < 2 || v->p[0] != '{')
		return -1;
	p = ws(p, end);
	if (*p == '}')
		return 0;
	for (;;) {
		struct member mb;
		p = ws(p, end);
		if (p >= end || *p != '"' || !(p = scan_string(p, end, &mb.key)))
			goto bad;
		p = ws(p, end);
		if (p >= end || *p++ != ':' || !(p = scan_value(p, end, &mb.value, 1)))
			goto bad;
		if (*n == cap) {
			struct member *grown = xmalloc(2 * cap * sizeof(*grown));
			memcpy(grown, *m, cap * sizeof(*grown));
			if (*m != local)
				free(*m);
			*m = grown;
			cap *= 2;
		}
		(*m)[(*n)++] = mb;
		p = ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p < end && *p == '}')
			return 0;
		goto bad;
	}
bad:
	if (*m != local)
		free(*m);
	*m = local;
	*n = 0;
	return -1;
}

static void release_members(struct member *local, struct member *m)
{
	if (m != local)
		free(m);
}

static int hex4(const char *p)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

static void put_utf8(struct strbuf *sb, unsigned cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp, n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12), b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18), b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), b[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
	}
	sb_add(sb, b, n);
}

/* The string's value (escapes decoded) into out; -1 if an escape is malformed. */
static int decode(const struct span *s, struct strbuf *out)
{
	const char *p = s->p, *end = s->p + s->n;

	sb_reset(out);
	while (p < end) {
		const char *run = p;
		while (p < end && *p != '\\')
			p++;
		sb_add(out, run, (size_t)(p - run));
		if (p >= end)
			break;
		if (++p >= end)
			return -1;
		switch (*p++) {
		case '"': sb_addch(out, '"'); break;
		case '\\': sb_addch(out, '\\'); break;
		case '/': sb_addch(out, '/'); break;
		case 'b': sb_addch(out, '\b'); break;
		case 'f': sb_addch(out, '\f'); break;
		case 'n': sb_addch(out, '\n'); break;
		case 'r': sb_addch(out, '\r'); break;
		case 't': sb_addch(out, '\t'); break;
		case 'u': {
			int cp = end - p >= 4 ? hex4(p) : -1;
			if (cp <= 0)	/* \u0000 cannot be held in a C string */
				return -1;
			p += 4;
			if (cp >= 0xd800 && cp < 0xdc00) {
				int lo = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2) : -1;
				if (lo < 0xdc00 || lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				p += 6;
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				return -1;
			}
			put_utf8(out, (unsigned)cp);
			break;
		}
		default:
			return -1;
		}
	}
	return 0;
}

/* The value of a string span as a C string: the text itself when it needs no decoding. */
struct str {
	struct strbuf buf;
	const char *s;
};

static int string_value(const struct span *v, struct str *out)
{
	struct span s;

	if (!v->n || v->p[0] != '"' || !scan_string(v->p, v->p + v->n, &s))
		return -1;
	/* Decoded (or copied: the span is not NUL-terminated) into the buffer. */
	if (s.escaped) {
		if (decode(&s, &out->buf))
			return -1;
	} else {
		sb_reset(&out->buf);
		sb_add(&out->buf, s.p, s.n);
	}
	out->s = sb_str(&out->buf);
	return 0;
}

/* Whether key (a member's key span) is name. */
static bool key_is(const struct span *key, const char *name, struct strbuf *scratch)
{
	if (!key->escaped)
		return key->n && key->p[0] == name[0] && !strncmp(key->p, name, key->n) &&
		       !name[key->n];
	return !decode(key, scratch) && !strcmp(sb_str(scratch), name);
}

/* The contents of a string without escapes, as sb_add_json_str() writes them. */
static void add_plain_string(struct strbuf *sb, const struct span *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s->p, *end = p + s->n, *run = p;

	sb_addch(sb, '"');
	for (; p < end; p++) {
		if (*p >= 0x20 && *p != '"' && *p != '\\')
			continue;
		char u[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] };
		sb_add(sb, run, (size_t)(p - run));
		sb_add(sb, u, 6);	/* cannot happen: the scan refused them */
		run = p + 1;
	}
	sb_add(sb, run, (size_t)(p - run));
	sb_addch(sb, '"');
}

/* A string value as JSON, re-encoded as sb_add_json_str() encodes it; false if malformed. */
static bool add_string(struct strbuf *sb, const struct span *v, struct str *tmp, bool omit_empty)
{
	struct span s;

	if (!v->n || v->p[0] != '"' || !scan_string(v->p, v->p + v->n, &s))
		return false;
	if (!s.escaped) {
		if (omit_empty && !s.n)
			return false;
		add_plain_string(sb, &s);
		return true;
	}
	if (decode(&s, &tmp->buf) || (omit_empty && !tmp->buf.len))
		return false;
	sb_add_json_str(sb, sb_str(&tmp->buf));
	return true;
}

static bool is_literal(const struct span *v, const char *lit)
{
	size_t n = strlen(lit);

	return v->n == n && !memcmp(v->p, lit, n);
}

/* A number token (or a numeric string, as proto3 JSON allows) as a double. */
static bool number_value(const struct span *v, struct str *tmp, double *d)
{
	char buf[64], *end;

	if (v->n && v->p[0] == '"') {
		if (string_value(v, tmp) || !*tmp->s)
			return false;
		*d = strtod(tmp->s, &end);
		return !*end && isfinite(*d);
	}
	if (!v->n || v->n >= sizeof(buf) || !strchr("-0123456789", v->p[0]))
		return false;
	memcpy(buf, v->p, v->n);
	buf[v->n] = '\0';
	*d = strtod(buf, &end);
	return !*end && isfinite(*d);
}

static bool int_value(const struct span *v, struct str *tmp, int64_t *out)
{
	char buf[64];

	if (v->n && v->p[0] == '"') {
		if (string_value(v, tmp))
			return false;
		return !wire_int64_parse(tmp->s, out);
	}
	if (!v->n || v->n >= sizeof(buf))
		return false;
	memcpy(buf, v->p, v->n);
	buf[v->n] = '\0';
	if (!wire_int64_parse(buf, out))
		return true;
	/* 5.0 (a decimal the database kept) is the integer 5; 5.5 is none. */
	double d;
	if (!number_value(v, tmp, &d) || !(d >= -9.2e18 && d <= 9.2e18) || d != floor(d))
		return false;
	*out = (int64_t)d;
	return true;
}

struct ctx {
	struct str tmp;		/* scratch for one string value */
	struct strbuf key;	/* scratch for escaped keys */
	int depth;
	bool fallback;		/* keys to sort have escapes: the tree path renders it */
};

static int member_cmp(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	size_t n = x->key.n < y->key.n ? x->key.n : y->key.n;
	int c = memcmp(x->key.p, y->key.p, n);

	return c ? c : (x->key.n > y->key.n) - (x->key.n < y->key.n);
}

/* Sorts members by key; false when a key is escaped (the caller decodes them). */
static bool sort_members(struct member *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].key.escaped)
			return false;
	qsort(m, n, sizeof(*m), member_cmp);
	return true;
}

static bool add_value(struct ctx *c, struct strbuf *sb, const struct span *v);

/*
 * An object of any JSON (a Value, a map): keys sorted; values by add().
 * Returns the number of its members, -1 when it is none.
 */
static long add_object(struct ctx *c, struct strbuf *sb, const struct span *v,
		       bool (*add)(struct ctx *, struct strbuf *, const struct span *,
				   const struct schema_field *),
		       const struct schema_field *f)
{
	struct member local[LOCAL_MEMBERS], *m;
	size_t n, shown = 0;

	if (members_of(v, local, &m, &n))
		return -1;
	if (!sort_members(m, n)) {
		/* Keys with escapes sort by their decoded value: the tree path's job. */
		c->fallback = true;
		release_members(local, m);
		return -1;
	}
	sb_addch(sb, '{');
	for (size_t i = 0; i < n; i++) {
		size_t mark = sb->len;
		if (i + 1 < n && member_cmp(&m[i], &m[i + 1]) == 0)
			continue;	/* a duplicate key: the last one counts */
		if (shown)
			sb_addch(sb, ',');
		sb_addch(sb, '"');
		sb_add(sb, m[i].key.p, m[i].key.n);
		sb_addstr(sb, "\":");
		if (add(c, sb, &m[i].value, f))
			shown++;
		else
			sb_setlen(sb, mark);
	}
	sb_addch(sb, '}');
	release_members(local, m);
	return (long)n;
}

static bool value_member(struct ctx *c, struct strbuf *sb, const struct span *v,
			 const struct schema_field *f)
{
	(void)f;
	return add_value(c, sb, v);
}

/* Any JSON (google.protobuf.Value): compact, keys sorted, numbers as doubles. */
static bool add_value(struct ctx *c, struct strbuf *sb, const struct span *v)
{
	double d;
	bool ok = true;

	if (++c->depth > MAX_DEPTH) {
		c->depth--;
		return false;
	}
	switch (v->n ? v->p[0] : 0) {
	case '{':
		ok = add_object(c, sb, v, value_member, NULL) >= 0;
		break;
	case '[': {
		const char *p = ws(v->p + 1, v->p + v->n), *end = v->p + v->n;
		bool first = true;
		sb_addch(sb, '[');
		while (ok && p < end && *p != ']') {
			struct span e;
			if (!(p = scan_value(p, end, &e, 1))) {
				ok = false;
				break;
			}
			if (!first)
				sb_addch(sb, ',');
			first = false;
			ok = add_value(c, sb, &e);
			p = ws(p, end);
			if (p < end && *p == ',')
				p = ws(p + 1, end);
		}
		sb_addch(sb, ']');
		break;
	}
	case '"':
		ok = add_string(sb, v, &c->tmp, false);
		break;
	case 't':
	case 'f':
	case 'n':
		sb_add(sb, v->p, v->n);
		break;
	default:
		ok = number_value(v, &c->tmp, &d);
		if (ok)
			schema_add_double(sb, d);
	}
	c->depth--;
	return ok;
}

static bool render_message(struct ctx *c, struct strbuf *sb, const struct schema_message *msg,
			   const struct span *v);

/* One value of field f (a list's element, a map's value, or the field's own). */
static bool add_scalar(struct ctx *c, struct strbuf *sb, const struct schema_field *f,
		       const struct span *v, bool omit_default)
{
	int64_t i64;
	double d;

	switch (f->kind) {
	case SK_STRING:
	case SK_BYTES:
	case SK_DURATION:
	case SK_TIMESTAMP:
		return add_string(sb, v, &c->tmp, omit_default);
	case SK_BOOL:
		if (is_literal(v, "true"))
			sb_addstr(sb, "true");
		else if (is_literal(v, "false") && !omit_default)
			sb_addstr(sb, "false");
		else
			return false;
		return true;
	case SK_INT32:
	case SK_INT64:
		if (!int_value(v, &c->tmp, &i64) || (omit_default && !i64))
			return false;
		sb_addf(sb, f->kind == SK_INT64 ? "\"%lld\"" : "%lld", (long long)i64);
		return true;
	case SK_DOUBLE:
		if (!number_value(v, &c->tmp, &d) || (omit_default && d == 0))
			return false;
		schema_add_double(sb, d);
		return true;
	case SK_ENUM: {
		const struct schema_enum *e = f->enumeration;
		const char *name = NULL;
		if (v->n && v->p[0] == '"') {
			if (string_value(v, &c->tmp))
				return false;
			for (size_t i = 0; i < e->count && !name; i++)
				if (!strcmp(e->names[i], c->tmp.s))
					name = e->names[i];
		} else if (e->numbers && int_value(v, &c->tmp, &i64)) {
			for (size_t i = 0; i < e->count && !name; i++)
				if (e->numbers[i] == i64)
					name = e->names[i];
		}
		if (!name || (omit_default && name == e->names[0]))
			return false;
		sb_add_json_str(sb, name);
		return true;
	}
	case SK_MESSAGE:
		return render_message(c, sb, f->message, v);
	case SK_STRUCT:
		return add_value(c, sb, v);
	}
	return false;
}

static bool map_member(struct ctx *c, struct strbuf *sb, const struct span *v,
		       const struct schema_field *f)
{
	return add_scalar(c, sb, f, v, false);
}

/* A repeated field's list: elements that do not render are left out. Returns its length. */
static long add_list(struct ctx *c, struct strbuf *sb, const struct schema_field *f,
		     const struct span *v)
{
	const char *p = ws(v->p + 1, v->p + v->n), *end = v->p + v->n;
	bool first = true;
	long n = 0;

	sb_addch(sb, '[');
	while (p < end && *p != ']') {
		struct span e;
		size_t mark = sb->len;
		if (!(p = scan_value(p, end, &e, 1)))
			return -1;
		n++;
		if (!first)
			sb_addch(sb, ',');
		if (add_scalar(c, sb, f, &e, false))
			first = false;
		else
			sb_setlen(sb, mark);
		p = ws(p, end);
		if (p < end && *p == ',')
			p = ws(p + 1, end);
	}
	sb_addch(sb, ']');
	return n;
}

/* A message: fields in msg's order; false (nothing kept) when v is no object. */
static bool render_message(struct ctx *c, struct strbuf *sb, const struct schema_message *msg,
			   const struct span *v)
{
	struct member local[LOCAL_MEMBERS], *m;
	size_t n;
	bool first = true;

	if (++c->depth > MAX_DEPTH || members_of(v, local, &m, &n)) {
		c->depth--;
		return false;
	}
	sb_addch(sb, '{');
	for (size_t i = 0; i < msg->count; i++) {
		const struct schema_field *f = &msg->fields[i];
		const struct span *fv = NULL;
		size_t mark = sb->len;
		bool shown;

		for (size_t k = 0; k < n; k++)	/* the last one counts, as in a parse */
			if (key_is(&m[k].key, f->json, &c->key))
				fv = &m[k].value;
		if (!fv || is_literal(fv, "null"))
			continue;
		if (!first)
			sb_addch(sb, ',');
		sb_add_json_str(sb, f->json);
		sb_addch(sb, ':');
		/* A list or map is shown when it has elements (those that do not
		 * render are left out of it), as in schema_render(). */
		if (f->map)
			shown = fv->p[0] == '{' && add_object(c, sb, fv, map_member, f) > 0;
		else if (f->repeated)
			shown = fv->p[0] == '[' && add_list(c, sb, f, fv) > 0;
		else
			shown = add_scalar(c, sb, f, fv, !f->presence);
		if (shown)
			first = false;
		else
			sb_setlen(sb, mark);
	}
	sb_addch(sb, '}');
	release_members(local, m);
	c->depth--;
	return true;
}

int schema_render_text(struct strbuf *sb, const struct schema_message *msg, const char *text)
{
	struct ctx c = { { STRBUF_INIT, NULL }, STRBUF_INIT, 0, false };
	const char *end = text + strlen(text);
	struct span v;
	size_t mark = sb->len;
	int rc = 0;

	/* Not UTF-8 (a database's text always is): the tree path refuses it. */
	const char *after = wire_utf8_valid(text, (size_t)(end - text)) ?
			    scan_value(text, end, &v, 0) : NULL;
	if (!after || ws(after, end) != end || v.p[0] != '{' ||
	    !render_message(&c, sb, msg, &v) || c.fallback) {
		/* Not an object, or a key with escapes in a map: the tree path decides. */
		json_t *obj = json_loads(text, JSON_DECODE_INT_AS_REAL, NULL);
		if (sb->len > mark)
			sb_setlen(sb, mark);
		rc = json_is_object(obj) ? 0 : -1;
		schema_render(sb, msg, rc ? NULL : obj);
		json_decref(obj);
	}
	sb_release(&c.tmp.buf);
	sb_release(&c.key);
	return rc;
}

long schema_render_field_text(struct strbuf *sb, const struct schema_field *f, const char *text)
{
	struct ctx c = { { STRBUF_INIT, NULL }, STRBUF_INIT, 0, false };
	const char *end = text + strlen(text);
	size_t mark = sb->len;
	struct span v;
	long rc = -1;

	const char *after = wire_utf8_valid(text, (size_t)(end - text)) ?
			    scan_value(text, end, &v, 0) : NULL;
	if (after && ws(after, end) == end) {
		if (f->map)
			rc = v.p[0] == '{' ? add_object(&c, sb, &v, map_member, f) : -1;
		else if (f->repeated)
			rc = v.p[0] == '[' ? add_list(&c, sb, f, &v) : -1;
		else
			rc = add_scalar(&c, sb, f, &v, false) ? 1 : -1;
	}
	if (c.fallback || !after) {
		json_t *tree = json_loads(text, JSON_DECODE_INT_AS_REAL | JSON_DECODE_ANY, NULL);
		sb_setlen(sb, mark);
		rc = !tree ? -1 : f->map ? (json_is_object(tree) ? (long)json_object_size(tree) : -1)
			: f->repeated ? (json_is_array(tree) ? (long)json_array_size(tree) : -1) : 1;
		if (rc < 0 || !schema_render_field(sb, f, tree))
			rc = -1;
		json_decref(tree);
	}
	if (rc < 0)
		sb_setlen(sb, mark);
	sb_release(&c.tmp.buf);
	sb_release(&c.key);
	return rc;
}
