/*
 * fields.c - partial-response masks parsed into a selection tree, and one
 * pass over JSON text that filters by it and lays it out (fields.h).
 */
#include "fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the selection tree -------------------------------------------------- */

struct fnode;

struct fchild {
	char *name;
	size_t len;
	struct fnode *node;
};

/* What a mask selects of one JSON value. */
struct fnode {
	bool all;		/* the whole value */
	struct fchild *kids;	/* named members, with what each selects of its value */
	size_t nkids, cap;
	struct fnode *star;	/* "*": what is selected of every other member */
};

struct fields {
	struct fnode *root;
	size_t nodes;		/* against FIELDS_MAX_NODES */
};

/* The selection of a whole value. */
static const struct fnode select_all = { .all = true };

static void node_free(struct fnode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nkids; i++) {
		free(n->kids[i].name);
		node_free(n->kids[i].node);
	}
	free(n->kids);
	node_free(n->star);
	free(n);
}

void fields_free(struct fields *f)
{
	if (!f)
		return;
	node_free(f->root);
	free(f);
}

static const struct fnode *node_kid(const struct fnode *n, const char *name, size_t len)
{
	for (size_t i = 0; i < n->nkids; i++)
		if (n->kids[i].len == len && !memcmp(n->kids[i].name, name, len))
			return n->kids[i].node;
	return NULL;
}

/* The node of n's member name (or "*" when name is NULL), made when new; NULL past the budget. */
static struct fnode *node_child(struct fields *f, struct fnode *n, const char *name, size_t len)
{
	if (!name) {
		if (!n->star) {
			if (f->nodes == FIELDS_MAX_NODES)
				return NULL;
			f->nodes++;
			n->star = xcalloc(1, sizeof(*n->star));
		}
		return n->star;
	}
	struct fnode *have = (struct fnode *)node_kid(n, name, len);
	if (have)
		return have;
	if (f->nodes == FIELDS_MAX_NODES)
		return NULL;
	f->nodes++;
	if (n->nkids == n->cap) {
		n->cap = n->cap ? 2 * n->cap : 4;
		n->kids = xrealloc(n->kids, n->cap * sizeof(*n->kids));
	}
	struct fchild *c = &n->kids[n->nkids++];
	c->name = xstrndup(name, len);
	c->len = len;
	c->node = xcalloc(1, sizeof(*c->node));
	return c->node;
}

/* dst selects what it did and what src does too. -1 past the budget. */
static int node_merge(struct fields *f, struct fnode *dst, const struct fnode *src)
{
	if (dst->all)
		return 0;
	if (src->all) {
		dst->all = true;
		return 0;
	}
	for (size_t i = 0; i < src->nkids; i++) {
		struct fnode *d = node_child(f, dst, src->kids[i].name, src->kids[i].len);
		if (!d || node_merge(f, d, src->kids[i].node))
			return -1;
	}
	if (src->star) {
		struct fnode *d = node_child(f, dst, NULL, 0);
		if (!d || node_merge(f, d, src->star))
			return -1;
	}
	return 0;
}

/*
 * "*" selects every member, and a member also named gets the union of both
 * selections ("*,trainingInput(region)" keeps all of trainingInput): the
 * star's selection is merged into each named sibling, level by level.
 */
static int node_fold_star(struct fields *f, struct fnode *n)
{
	if (n->all)
		return 0;
	for (size_t i = 0; i < n->nkids; i++)
		if ((n->star && node_merge(f, n->kids[i].node, n->star)) ||
		    node_fold_star(f, n->kids[i].node))
			return -1;
	return n->star ? node_fold_star(f, n->star) : 0;
}

/* --- the mask's syntax ---------------------------------------------------- */

struct mask_parser {
	struct fields *f;
	const char *s;
	size_t i;
	char *err;
	size_t errlen;
};

static bool name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '@' || c == '$' || c >= 0x80;
}

static int syntax_error(struct mask_parser *p, const char *what)
{
	unsigned char c = (unsigned char)p->s[p->i];

	if (!c)
		snprintf(p->err, p->errlen, "%s at the end", what);
	else if (c > 0x20 && c < 0x7f)
		snprintf(p->err, p->errlen, "%s at character %zu ('%c')", what, p->i + 1, c);
	else
		snprintf(p->err, p->errlen, "%s at character %zu (byte 0x%02x)", what, p->i + 1, c);
	return -1;
}

static int too_large(struct mask_parser *p)
{
	snprintf(p->err, p->errlen, "the selection names more than %d fields", FIELDS_MAX_NODES);
	return -1;
}

static int parse_list(struct mask_parser *p, struct fnode *under, int depth);

/* path [ "(" list ")" ], path = name *( ("/" | ".") name ), name = 1*name_char | "*" */
static int parse_selection(struct mask_parser *p, struct fnode *under, int depth)
{
	struct fnode *n = under;

	for (;;) {
		const char *s = p->s + p->i;
		size_t len = 0;

		if (*s == '*') {
			p->i++;
			if (name_char((unsigned char)s[1]))
				return syntax_error(p, "'*' stands for a whole name: unexpected character");
			n = node_child(p->f, n, NULL, 0);
		} else {
			while (name_char((unsigned char)s[len]))
				len++;
			if (!len)
				return syntax_error(p, "expected a field name");
			p->i += len;
			n = node_child(p->f, n, s, len);
		}
		if (!n)
			return too_large(p);
		if (p->s[p->i] != '/' && p->s[p->i] != '.')
			break;
		p->i++;
	}
	if (p->s[p->i] != '(') {
		n->all = true;
		return 0;
	}
	if (depth == FIELDS_MAX_DEPTH)
		return syntax_error(p, "parentheses nest too deep (at most 32)");
	p->i++;
	if (parse_list(p, n, depth + 1))
		return -1;
	if (p->s[p->i] != ')')
		return syntax_error(p, "expected ',' or ')'");
	p->i++;
	return 0;
}

/* selection *( "," selection ) [ "," ] */
static int parse_list(struct mask_parser *p, struct fnode *under, int depth)
{
	for (;;) {
		if (parse_selection(p, under, depth))
			return -1;
		if (p->s[p->i] != ',')
			return 0;
		p->i++;
		if (!p->s[p->i] || p->s[p->i] == ')')
			return 0;	/* a trailing comma, as Google allows */
	}
}

int fields_parse(const char *mask, struct fields **out, char *err, size_t errlen)
{
	struct fields *f = xcalloc(1, sizeof(*f));
	struct mask_parser p = { .f = f, .s = mask, .err = err, .errlen = errlen };

	*out = NULL;
	f->root = xcalloc(1, sizeof(*f->root));
	if (!*mask) {
		fields_free(f);
		return 0;	/* an empty mask: every field, as Google's */
	}
	if (parse_list(&p, f->root, 0) ||
	    (mask[p.i] && syntax_error(&p, "expected ','")) ||
	    (node_fold_star(f, f->root) && too_large(&p))) {
		fields_free(f);
		return -1;
	}
	if (f->root->all || (f->root->star && f->root->star->all)) {
		fields_free(f);	/* "*", "a,*": everything */
		return 0;
	}
	*out = f;
	return 0;
}

/* --- JSON text, re-laid ---------------------------------------------------- */

#define JSON_MAX_DEPTH 512

struct writer {
	const char *s;
	size_t n, i;
	bool pretty;
	struct strbuf *out;
};

static void skip_ws(struct writer *w)
{
	while (w->i < w->n && (w->s[w->i] == ' ' || w->s[w->i] == '\n' || w->s[w->i] == '\r' ||
			       w->s[w->i] == '\t'))
		w->i++;
}

static void newline(struct writer *w, int level)
{
	if (!w->pretty)
		return;
	sb_grow(w->out, 1 + 2 * (size_t)level);
	w->out->buf[w->out->len++] = '\n';
	memset(w->out->buf + w->out->len, ' ', 2 * (size_t)level);
	sb_setlen(w->out, w->out->len + 2 * (size_t)level);
}

/* The end of the string token at w->i (its opening quote); 0 when unterminated. */
static size_t string_end(const struct writer *w)
{
	size_t i = w->i + 1;

	while (i < w->n) {
		const char *q = memchr(w->s + i, '"', w->n - i);
		if (!q)
			return 0;
		size_t at = (size_t)(q - w->s), bs = 0;
		while (at - bs > w->i && w->s[at - bs - 1] == '\\')
			bs++;
		if (bs % 2 == 0)
			return at + 1;
		i = at + 1;
	}
	return 0;
}

/* The end of the number or literal at w->i; w->i when there is none. */
static size_t scalar_end(const struct writer *w)
{
	size_t i = w->i;

	while (i < w->n && ((w->s[i] >= '0' && w->s[i] <= '9') || (w->s[i] >= 'a' && w->s[i] <= 'z') ||
			    w->s[i] == '-' || w->s[i] == '+' || w->s[i] == '.' || w->s[i] == 'E'))
		i++;
	return i;
}

/*
 * The value at w->i under sel, written when write (else skipped). A scalar
 * under a selection that is not the whole value has nothing selected: the
 * caller does not write it (see selects()).
 */
static int value(struct writer *w, const struct fnode *sel, int level, bool write);

static bool is_container(const struct writer *w)
{
	return w->i < w->n && (w->s[w->i] == '{' || w->s[w->i] == '[');
}

/* Whether the value at w->i has anything sel selects. */
static bool selects(const struct writer *w, const struct fnode *sel)
{
	return sel && (sel->all || is_container(w));
}

static int container(struct writer *w, const struct fnode *sel, int level, bool write)
{
	bool object = w->s[w->i] == '{';
	char close = object ? '}' : ']';
	bool first = true;

	if (level == JSON_MAX_DEPTH)
		return -1;
	if (write)
		sb_addch(w->out, w->s[w->i]);
	w->i++;
	skip_ws(w);
	if (w->i < w->n && w->s[w->i] == close) {
		w->i++;
		if (write)
			sb_addch(w->out, close);
		return 0;
	}
	for (;;) {
		const struct fnode *child = sel;
		size_t key = 0, key_end = 0;

		skip_ws(w);
		if (object) {
			if (w->i >= w->n || w->s[w->i] != '"' || !(key_end = string_end(w)))
				return -1;
			key = w->i;
			w->i = key_end;
			skip_ws(w);
			if (w->i >= w->n || w->s[w->i] != ':')
				return -1;
			w->i++;
			skip_ws(w);
			if (!sel->all) {
				/* A key with an escape matches no name (names have none). */
				const char *k = w->s + key + 1;
				size_t klen = key_end - key - 2;
				child = memchr(k, '\\', klen) ? NULL : node_kid(sel, k, klen);
				if (!child)
					child = sel->star;
			}
		}
		bool keep = write && selects(w, child);
		if (keep) {
			if (!first)
				sb_addch(w->out, ',');
			first = false;
			newline(w, level + 1);
			if (object) {
				sb_add(w->out, w->s + key, key_end - key);
				sb_add(w->out, ": ", w->pretty ? 2 : 1);
			}
		}
		if (value(w, keep ? child : NULL, level + 1, keep))
			return -1;
		skip_ws(w);
		if (w->i >= w->n)
			return -1;
		if (w->s[w->i] == ',') {
			w->i++;
			continue;
		}
		if (w->s[w->i] != close)
			return -1;
		w->i++;
		break;
	}
	if (write) {
		if (!first)
			newline(w, level);
		sb_addch(w->out, close);
	}
	return 0;
}

static int value(struct writer *w, const struct fnode *sel, int level, bool write)
{
	size_t end;

	skip_ws(w);
	if (w->i >= w->n)
		return -1;
	if (is_container(w))
		return container(w, sel ? sel : &select_all, level, write);
	if (w->s[w->i] == '"') {
		if (!(end = string_end(w)))
			return -1;
	} else if ((end = scalar_end(w)) == w->i) {
		return -1;
	}
	if (write)
		sb_add(w->out, w->s + w->i, end - w->i);
	w->i = end;
	return 0;
}

int json_rewrite(const char *text, size_t len, const struct fields *f, bool pretty,
		 struct strbuf *out)
{
	struct writer w = { .s = text, .n = len, .pretty = pretty, .out = out };
	const struct fnode *sel = f ? f->root : &select_all;

	/* Pretty text is about a third longer than compact: one allocation. */
	sb_grow(out, len + (pretty ? len / 2 + 2 : 0));
	skip_ws(&w);
	if (!selects(&w, sel) || value(&w, sel, 0, true))
		return -1;
	skip_ws(&w);
	if (w.i != w.n)
		return -1;
	if (pretty)
		sb_addch(out, '\n');
	return 0;
}
