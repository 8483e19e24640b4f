/*
 * fuzz_fields.c - libFuzzer target for partial responses: the `fields` mask
 * parser and the JSON text writer (server/fields.c).
 *
 * The input is a mask, a newline, then JSON text. Whatever it holds:
 * - parsing the mask either fails with a message and no selection, or
 *   gives one (NULL for everything) that fields_free() releases;
 * - the writer never reads past the text, whatever it is, and never
 *   crashes on text that is not JSON (it says -1);
 * - when the text is JSON (jansson reads it) and the writer takes it, what
 *   it writes is JSON, pretty and compact alike, and both are the same
 *   value; with no mask, the value read.
 *
 * Build and run: tools/fuzz.sh run fields (FUZZ_SECONDS, default 600).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t mlen = nl ? (size_t)(nl - data) : size;
	char *mask = strndup((const char *)data, mlen);
	const char *text = nl ? (const char *)nl + 1 : "";
	size_t tlen = nl ? size - mlen - 1 : 0;
	struct strbuf pretty = STRBUF_INIT, compact = STRBUF_INIT;
	struct fields *f = NULL;
	char err[160];

	if (strlen(mask) != mlen || fields_parse(mask, &f, err, sizeof(err))) {
		if (strlen(mask) == mlen && (!err[0] || f))
			abort();	/* a refusal says why and gives nothing */
		free(mask);
		return 0;
	}
	/* The text is copied so that ASan sees a read past its end. */
	char *copy = malloc(tlen ? tlen : 1);
	memcpy(copy, text, tlen);
	int rp = json_rewrite(copy, tlen, f, true, &pretty);
	int rc = json_rewrite(copy, tlen, f, false, &compact);
	if (rp != rc)
		abort();	/* the layout does not decide what is read */
	json_t *in = json_loadb(copy, tlen, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (in && !rp) {
		json_t *p = json_loadb(pretty.buf, pretty.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		json_t *c = json_loadb(compact.buf, compact.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (!p || !c || !json_equal(p, c) || (!f && !json_equal(p, in)))
			abort();
		if (pretty.buf[pretty.len - 1] != '\n' || memchr(compact.buf, '\n', compact.len))
			abort();
		json_decref(p);
		json_decref(c);
	}
	json_decref(in);
	free(copy);
	sb_release(&pretty);
	sb_release(&compact);
	fields_free(f);
	free(mask);
	return 0;
}
