#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "wire.h"

enum log_level log_min_level = LOG_INFO;
static enum log_format log_fmt = LOG_FORMAT_TEXT;
static _Thread_local const char *thread_request_id;

static const char *const level_names[] = { "DEBUG", "INFO", "WARN", "ERROR" };
static const char *const level_json[] = { "debug", "info", "warn", "error" };

int log_level_parse(const char *s, enum log_level *out)
{
	static const struct { const char *name; enum log_level level; } names[] = {
		{ "debug", LOG_DEBUG }, { "info", LOG_INFO }, { "warn", LOG_WARN },
		{ "warning", LOG_WARN }, { "error", LOG_ERROR },
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		if (!strcasecmp(s, names[i].name)) {
			*out = names[i].level;
			return 0;
		}
	}
	return -1;
}

void log_set_level(enum log_level level)
{
	log_min_level = level;
}

int log_format_parse(const char *s, enum log_format *out)
{
	if (!strcasecmp(s, "text"))
		*out = LOG_FORMAT_TEXT;
	else if (!strcasecmp(s, "json"))
		*out = LOG_FORMAT_JSON;
	else
		return -1;
	return 0;
}

void log_set_format(enum log_format format)
{
	log_fmt = format;
}

void log_set_request_id(const char *id)
{
	thread_request_id = id;
}

/* Appends s to buf[*n..len) as a JSON string body (no quotes), truncating. */
static void json_escape(char *buf, size_t len, size_t *n, const char *s)
{
	for (; *s && *n + 7 < len; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			buf[(*n)++] = '\\';
			buf[(*n)++] = (char)ch;
		} else if (ch == '\n') {
			buf[(*n)++] = '\\';
			buf[(*n)++] = 'n';
		} else if (ch < 0x20 || ch == 0x7f) {
			*n += (size_t)snprintf(buf + *n, len - *n, "\\u%04x", ch);
		} else {
			buf[(*n)++] = (char)ch;
		}
	}
	/* Never end inside a multi-byte character cut by truncation. */
	if (*s) {
		while (*n && ((unsigned char)buf[*n - 1] & 0xc0) == 0x80)
			(*n)--;
		if (*n && ((unsigned char)buf[*n - 1] & 0xc0) == 0xc0)
			(*n)--;
	}
	buf[*n] = '\0';
}

size_t log_format_line(char *buf, size_t len, enum log_level level, int64_t time_us,
		       const char *request_id, const char *msg)
{
	char stamp[40];
	time_t secs = (time_t)(time_us / 1000000);
	struct tm tm;
	size_t n;
	int k;

	gmtime_r(&secs, &tm);
	n = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + n, sizeof(stamp) - n, ".%03dZ", (int)(time_us / 1000 % 1000));
	if (log_fmt == LOG_FORMAT_TEXT) {
		if (request_id)
			k = snprintf(buf, len, "%s %-5s [req %s] %s", stamp, level_names[level],
				     request_id, msg);
		else
			k = snprintf(buf, len, "%s %-5s %s", stamp, level_names[level], msg);
		return k < 0 ? 0 : (size_t)k >= len ? len - 1 : (size_t)k;
	}
	/* JSON: the message must be valid UTF-8 to be a JSON string. */
	char *clean = NULL;
	if (!wire_utf8_valid(msg, strlen(msg)))
		msg = clean = wire_utf8_sanitize(msg);
	k = snprintf(buf, len, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"", stamp,
		     level_json[level]);
	n = k < 0 ? 0 : (size_t)k;
	json_escape(buf, len - 300, &n, msg);	/* room for the request id and the end */
	free(clean);
	if (request_id && wire_utf8_valid(request_id, strlen(request_id))) {
		n += (size_t)snprintf(buf + n, len - n, "\",\"request_id\":\"");
		json_escape(buf, len - 3, &n, request_id);
	}
	n += (size_t)snprintf(buf + n, len - n, "\"}");
	return n;
}

void log_write(enum log_level level, const char *fmt, ...)
{
	char msg[2048];
	char line[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	size_t len = log_format_line(line, sizeof(line) - 1, level, now_usec(), thread_request_id,
				     msg);
	line[len] = '\n';
	line[len + 1] = '\0';
	/* One fputs per line keeps concurrent threads from interleaving. */
	fputs(line, stderr);
}
