/*
 * fuzz_log.c - libFuzzer target for the log's escaping and cutting
 * (lib/log.c, log_format_line).
 *
 * The first byte picks the buffer size; the rest, up to the first NUL, is
 * the message, and what follows that NUL the request id. Each input is
 * formatted in text and in JSON. Whatever it holds:
 * - the text line is one line of printable ASCII and valid UTF-8 without C1
 *   controls, line separators or bidi controls, shorter than the buffer;
 *   when the message was not cut, unescaping it gives the message back;
 * - the JSON line is one JSON object whose msg is a string, when the buffer
 *   leaves room for the object's keys.
 *
 * Build and run: tools/fuzz.sh run log (FUZZ_SECONDS, default 600).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The text escaping undone (lib/log.h); NULL on an escape log.c never writes. */
static char *unescape(const char *s)
{
	char *out = malloc(strlen(s) * 4 + 1), *o = out;

	while (*s) {
		if (*s != '\\') {
			*o++ = *s++;
			continue;
		}
		s++;
		if (*s == '\\' || *s == 'n' || *s == 'r' || *s == 't') {
			*o++ = *s == 'n' ? '\n' : *s == 'r' ? '\r' : *s == 't' ? '\t' : '\\';
			s++;
		} else if (*s == 'x' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
			*o++ = (char)(hexval(s[1]) << 4 | hexval(s[2]));
			s += 3;
		} else if (*s == 'u' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0 && hexval(s[3]) >= 0 &&
			   hexval(s[4]) >= 0) {
			unsigned cp = (unsigned)(hexval(s[1]) << 12 | hexval(s[2]) << 8 |
						 hexval(s[3]) << 4 | hexval(s[4]));
			if (cp < 0x800) {
				*o++ = (char)(0xc0 | cp >> 6);
			} else {
				*o++ = (char)(0xe0 | cp >> 12);
				*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
			}
			*o++ = (char)(0x80 | (cp & 0x3f));
			s += 5;
		} else {
			free(out);
			return NULL;
		}
	}
	*o = '\0';
	return out;
}

static void check_text(const char *line, size_t n, size_t size)
{
	const unsigned char *p = (const unsigned char *)line;

	if (n >= size || strlen(line) != n || !wire_utf8_valid(line, n))
		abort();
	for (size_t i = 0; i < n; i++) {
		if (p[i] < 0x20 || p[i] == 0x7f)
			abort();
		/* C1 (U+0080-U+009F), U+200E/F, U+2028-U+202E, U+2066-U+2069 */
		if (p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
			abort();
		if (p[i] == 0xe2 && i + 2 < n && p[i + 1] == 0x80 &&
		    (p[i + 2] == 0x8e || p[i + 2] == 0x8f || (p[i + 2] >= 0xa8 && p[i + 2] <= 0xae)))
			abort();
		if (p[i] == 0xe2 && i + 2 < n && p[i + 1] == 0x81 && p[i + 2] >= 0xa6 &&
		    p[i + 2] <= 0xa9)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char line[16384];
	const int64_t t = INT64_C(1795341600) * 1000000;
	const char *prefix = "2026-11-22T10:00:00.000Z ERROR ";
	size_t bufsize, n;
	char *msg, *rid = NULL;

	if (!size)
		return 0;
	bufsize = data[0] < 128 ? sizeof(line) : (size_t)(data[0] - 127) * 64;
	msg = malloc(size);
	memcpy(msg, data + 1, size - 1);
	msg[size - 1] = '\0';
	if (strlen(msg) + 1 < size - 1)
		rid = msg + strlen(msg) + 1;

	log_set_format(LOG_FORMAT_TEXT);
	n = log_format_line(line, bufsize, LOG_ERROR, t, rid, msg);
	check_text(line, n, bufsize);
	n = log_format_line(line, bufsize, LOG_ERROR, t, NULL, msg);
	check_text(line, n, bufsize);
	if (bufsize == sizeof(line) && strlen(msg) * 6 < LOG_MSG_MAX) {
		/* Not cut: the escaping is undone exactly. */
		char *back;
		if (strncmp(line, prefix, strlen(prefix)) ||
		    !(back = unescape(line + strlen(prefix))))
			abort();
		if (strcmp(back, msg))
			abort();
		free(back);
	}

	log_set_format(LOG_FORMAT_JSON);
	n = log_format_line(line, bufsize, LOG_ERROR, t, rid, msg);
	if (n >= bufsize || memchr(line, '\n', n))
		abort();
	if (bufsize >= 200 + (rid ? 6 * strlen(rid) : 0)) {
		json_error_t jerr;
		json_t *o = json_loads(line, 0, &jerr);
		if (!json_is_string(json_object_get(o, "msg")))
			abort();
		json_decref(o);
	}
	log_set_format(LOG_FORMAT_TEXT);
	free(msg);
	return 0;
}
