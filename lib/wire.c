#include "wire.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int wire_double_get(const json_t *v, double *out)
{
	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	if (json_is_string(v) && json_string_length(v)) {
		char *end;
		*out = strtod(json_string_value(v), &end);
		return *end || !isfinite(*out) ? -1 : 0;
	}
	return -1;
}

int wire_int64_parse(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!*s || isspace((unsigned char)*s) || *s == '+')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int wire_int64_get(const json_t *v, int64_t *out)
{
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_real(v)) {
		/* 4.0 is an integer in JSON's eyes; 4.5 is not. */
		double d = json_real_value(v);
		/* Range first: casting an out-of-range double is undefined. */
		if (!(d >= -9.2e18 && d <= 9.2e18) || d != (double)(long long)d)
			return -1;
		*out = (int64_t)d;
		return 0;
	}
	if (json_is_string(v))
		return wire_int64_parse(json_string_value(v), out);
	return -1;
}

/*
 * The proto Duration range is +-315,576,000,000 s (10,000 years), more than
 * int64 nanoseconds hold; we take up to 9,223,372,035 s (292 years), which
 * no training schedule comes near, and refuse more.
 */
#define DURATION_MAX_SECONDS 9223372035LL

int wire_duration_parse(const char *s, int64_t *nanos)
{
	const char *p = s;
	int neg = 0;
	int64_t secs = 0, frac = 0;
	int digits = 0, fdigits = 0;

	if (*p == '-') {
		neg = 1;
		p++;
	}
	for (; isdigit((unsigned char)*p); p++, digits++) {
		secs = secs * 10 + (*p - '0');
		if (secs > DURATION_MAX_SECONDS)
			return -1;
	}
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, fdigits++) {
			if (fdigits >= 9)
				return -1;
			frac = frac * 10 + (*p - '0');
		}
		if (!fdigits)
			return -1;
	}
	if (!digits && !fdigits)
		return -1;
	if (strcmp(p, "s"))
		return -1;
	for (int i = fdigits; i < 9; i++)
		frac *= 10;
	/* Fits: 9223372035 * 1e9 + 999999999 < INT64_MAX. */
	*nanos = secs * 1000000000LL + frac;
	if (neg)
		*nanos = -*nanos;
	return 0;
}

void wire_duration_format(int64_t nanos, char *buf, size_t len)
{
	const char *sign = nanos < 0 ? "-" : "";
	uint64_t n = nanos < 0 ? (uint64_t)-(nanos + 1) + 1 : (uint64_t)nanos;
	uint64_t secs = n / 1000000000ULL, frac = n % 1000000000ULL;

	if (!frac)
		snprintf(buf, len, "%s%llus", sign, (unsigned long long)secs);
	else if (frac % 1000000 == 0)
		snprintf(buf, len, "%s%llu.%03llus", sign, (unsigned long long)secs,
			 (unsigned long long)(frac / 1000000));
	else if (frac % 1000 == 0)
		snprintf(buf, len, "%s%llu.%06llus", sign, (unsigned long long)secs,
			 (unsigned long long)(frac / 1000));
	else
		snprintf(buf, len, "%s%llu.%09llus", sign, (unsigned long long)secs,
			 (unsigned long long)frac);
}

void wire_time_format(int64_t usec, char *buf, size_t len)
{
	int64_t secs = usec / 1000000, frac = usec % 1000000;
	struct tm tm;
	time_t t;
	size_t n;

	if (frac < 0) {
		frac += 1000000;
		secs -= 1;
	}
	t = (time_t)secs;
	gmtime_r(&t, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!frac)
		snprintf(buf + n, len - n, "Z");
	else if (frac % 1000 == 0)
		snprintf(buf + n, len - n, ".%03dZ", (int)(frac / 1000));
	else
		snprintf(buf + n, len - n, ".%06dZ", (int)frac);
}

static int take_digits(const char **p, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

int wire_time_parse(const char *s, int64_t *usec)
{
	const char *p = s;
	int Y, M, D, h, m, sec, oh = 0, om = 0;
	int64_t frac = 0;
	int fdigits = 0, sign = 0;
	struct tm tm;

	if (take_digits(&p, 4, &Y) || *p++ != '-' || take_digits(&p, 2, &M) ||
	    *p++ != '-' || take_digits(&p, 2, &D) || (*p != 'T' && *p != 't'))
		return -1;
	p++;
	if (take_digits(&p, 2, &h) || *p++ != ':' || take_digits(&p, 2, &m) ||
	    *p++ != ':' || take_digits(&p, 2, &sec))
		return -1;
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, fdigits++) {
			if (fdigits < 6)
				frac = frac * 10 + (*p - '0');
			else if (fdigits >= 9)
				return -1;
		}
		if (!fdigits)
			return -1;
		for (int i = fdigits; i < 6; i++)
			frac *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '-' ? -1 : 1;
		p++;
		if (take_digits(&p, 2, &oh) || *p++ != ':' || take_digits(&p, 2, &om))
			return -1;
	} else {
		return -1;
	}
	if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	int64_t t = (int64_t)timegm(&tm) - (int64_t)sign * (oh * 3600 + om * 60);
	*usec = t * 1000000 + frac;
	return 0;
}

static const char b64std[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char *wire_base64_encode(const void *data, size_t len, bool url)
{
	const unsigned char *in = data;
	const char *tab = url ? b64url : b64std;
	char *out = xmalloc(4 * ((len + 2) / 3) + 1);
	size_t o = 0, i;

	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = tab[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		if (i + 1 < len)
			out[o++] = tab[(v >> 6) & 63];
		else if (!url)
			out[o++] = '=';
		if (!url)
			out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

long wire_base64_decode(const char *s, void *out, size_t cap, bool url)
{
	const char *tab = url ? b64url : b64std;
	unsigned char *dst = out;
	size_t n = 0, len = strlen(s);
	uint32_t acc = 0;
	int bits = 0;

	if (!url) {
		if (len % 4)
			return -1;
		while (len && s[len - 1] == '=')
			len--;
		if (strlen(s) - len > 2)
			return -1;
	}
	for (size_t i = 0; i < len; i++) {
		const char *c = s[i] ? strchr(tab, s[i]) : NULL;
		if (!c)
			return -1;
		acc = acc << 6 | (uint32_t)(c - tab);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n >= cap)
				return -1;
			dst[n++] = (unsigned char)(acc >> bits);
		}
	}
	/* Leftover bits must be zero padding, and a lone char is invalid. */
	if (bits >= 6 || (acc & ((1u << bits) - 1)))
		return -1;
	return (long)n;
}

size_t wire_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		c = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		c = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		c = p[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Length of the UTF-8 sequence at p (at most n bytes), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	uint32_t cp;

	return wire_utf8_decode(p, n, &cp);
}

bool wire_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	while (len) {
		size_t n = utf8_seq(p, len);
		if (!n)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

char *wire_utf8_sanitize(const char *s)
{
	size_t len = strlen(s);
	const unsigned char *p = (const unsigned char *)s;
	char *out = xmalloc(3 * len + 1), *o = out;

	while (len) {
		size_t n = utf8_seq(p, len);
		if (n) {
			memcpy(o, p, n);
			o += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			n = 1;
		}
		p += n;
		len -= n;
	}
	*o = '\0';
	return out;
}

bool wire_cluster_id_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > WIRE_CLUSTER_ID_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
			return false;
	return true;
}
