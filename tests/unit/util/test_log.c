#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <jansson.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/err.h"
#include "util/log.h"

/* A sink in memory; capture_end() returns what was written (free it). */
static FILE *sink;
static char *sink_text;
static size_t sink_len;

static void capture(enum log_format fmt, enum log_level min)
{
	sink = open_memstream(&sink_text, &sink_len);
	cr_assert_not_null(sink);
	log_setup(sink, fmt, min);
}

static char *capture_end(void)
{
	log_setup(NULL, LOG_FORMAT_LOGFMT, LOG_INFO);
	fclose(sink);
	return sink_text;
}

#define TIME_RE \
	"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z"

static bool matches(const char *re, const char *s)
{
	regex_t r;
	int rc;

	cr_assert_eq(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
	rc = regexec(&r, s, 0, NULL, 0);
	regfree(&r);
	return rc == 0;
}

/* One logfmt line without its "time=... " prefix (checked here). */
static const char *after_time(const char *line)
{
	cr_assert(matches("^time=" TIME_RE " ", line), "line: %s", line);
	return strchr(line, ' ') + 1;
}

/* The line that one call produced. */
static char *logfmt_line(const char *key, const char *value)
{
	char *text, *rest;

	capture(LOG_FORMAT_LOGFMT, LOG_DEBUG);
	log_info("m", key, value, NULL);
	text = capture_end();
	rest = strdup(after_time(text));
	free(text);
	return rest;
}

static void assert_logfmt_value(const char *value, const char *want)
{
	char *line = logfmt_line("k", value), expect[512];

	snprintf(expect, sizeof(expect), "level=info msg=m k=%s\n", want);
	cr_assert_str_eq(line, expect, "value [%s]", value ? value : "NULL");
	free(line);
}

Test(log, logfmt_line)
{
	char *text;

	capture(LOG_FORMAT_LOGFMT, LOG_INFO);
	log_info("synced app", "app", "web", "revision", "abc", NULL);
	text = capture_end();
	cr_assert_str_eq(
		after_time(text),
		"level=info msg=\"synced app\" app=web revision=abc\n");
	free(text);
}

Test(log, time_is_utc_now)
{
	struct tm tm = {0};
	int ms;
	char *text;
	time_t t;

	capture(LOG_FORMAT_LOGFMT, LOG_INFO);
	log_info("x", NULL);
	text = capture_end();
	cr_assert_eq(sscanf(text, "time=%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year,
			    &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
			    &tm.tm_sec, &ms),
		     7);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	cr_assert_leq(labs((long)(t - time(NULL))), 5);
	free(text);
}

Test(log, logfmt_quoting)
{
	assert_logfmt_value("plain", "plain");
	assert_logfmt_value("", "");
	assert_logfmt_value(NULL, "");
	assert_logfmt_value("two words", "\"two words\"");
	assert_logfmt_value("a=b", "\"a=b\"");
	assert_logfmt_value("say \"hi\"", "\"say \\\"hi\\\"\"");
	assert_logfmt_value("back\\slash", "back\\slash");
	assert_logfmt_value("q\"\\", "\"q\\\"\\\\\"");
	assert_logfmt_value("tab\there", "\"tab\\there\"");
	assert_logfmt_value("one\ntwo\r", "\"one\\ntwo\\r\"");
	assert_logfmt_value("bell\a", "\"bell\\u0007\"");
	assert_logfmt_value("del\x7f", "\"del\\u007f\"");
	assert_logfmt_value("h\xc3\xa9llo", "h\xc3\xa9llo");
	assert_logfmt_value("bad\xff", "\"bad\\ufffd\"");
	assert_logfmt_value("\xc0\xaf", "\"\\ufffd\\ufffd\""); /* overlong */
	assert_logfmt_value("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	assert_logfmt_value("cut\xe2\x82", "\"cut\\ufffd\\ufffd\"");
}

Test(log, msg_quoting_and_empty_msg)
{
	char *text;

	capture(LOG_FORMAT_LOGFMT, LOG_DEBUG);
	log_info("done", NULL);
	log_info("", NULL);
	log_msg(LOG_INFO, NULL, NULL);
	log_info("a \"quoted\"\nmsg", NULL);
	text = capture_end();
	cr_assert(matches("^time=" TIME_RE " level=info msg=done\n"
			  "time=" TIME_RE " level=info msg=\n"
			  "time=" TIME_RE " level=info msg=\n"
			  "time=" TIME_RE " level=info "
			  "msg=\"a \\\\\"quoted\\\\\"\\\\nmsg\"\n$",
			  text),
		  "%s", text);
	free(text);
}

Test(log, json_line)
{
	char *text;

	capture(LOG_FORMAT_JSON, LOG_INFO);
	log_warn("synced app", "app", "web", "empty", "", "null", NULL, NULL);
	text = capture_end();
	cr_assert(matches("^\\{\"time\":\"" TIME_RE "\",\"level\":\"warn\","
			  "\"msg\":\"synced app\",\"app\":\"web\","
			  "\"empty\":\"\",\"null\":\"\"\\}\n$",
			  text),
		  "%s", text);
	free(text);
}

Test(log, json_escaping_round_trips)
{
	char value[200], *text;
	json_error_t jerr;
	json_t *obj;
	size_t n = 0;

	for (int c = 1; c < 0x80; c++)
		value[n++] = (char)c;
	memcpy(value + n, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9);
	n += 9;
	value[n] = '\0';

	capture(LOG_FORMAT_JSON, LOG_DEBUG);
	log_error("all \"bytes\"\n", "v", value, "bad",
		  "a\xff"
		  "b",
		  NULL);
	text = capture_end();
	cr_assert_eq(strchr(text, '\n'), text + strlen(text) - 1,
		     "one line: %s", text);
	obj = json_loads(text, 0, &jerr);
	cr_assert_not_null(obj, "%s: %s", jerr.text, text);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "level")),
			 "error");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "msg")),
			 "all \"bytes\"\n");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "v")), value);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "bad")),
			 "a\xef\xbf\xbd"
			 "b");
	cr_assert(json_is_string(json_object_get(obj, "time")));
	json_decref(obj);
	free(text);
}

Test(log, level_filtering)
{
	char *text;

	capture(LOG_FORMAT_LOGFMT, LOG_WARN);
	cr_assert_not(log_enabled(LOG_DEBUG));
	cr_assert_not(log_enabled(LOG_INFO));
	cr_assert(log_enabled(LOG_WARN));
	cr_assert(log_enabled(LOG_ERROR));
	log_debug("d", NULL);
	log_info("i", NULL);
	log_warn("w", NULL);
	log_error("e", NULL);
	log_msg(LOG_INFO, "i2", NULL);
	log_msg(LOG_ERROR, "e2", NULL);
	text = capture_end();
	cr_assert(matches("^time=" TIME_RE " level=warn msg=w\n"
			  "time=" TIME_RE " level=error msg=e\n"
			  "time=" TIME_RE " level=error msg=e2\n$",
			  text),
		  "%s", text);
	free(text);
}

Test(log, default_is_stderr_logfmt_info, .init = cr_redirect_stderr)
{
	char line[512];
	FILE *err;

	log_debug("hidden", NULL);
	log_info("shown", "k", "v", NULL);
	fflush(stderr);
	err = cr_get_redirected_stderr();
	cr_assert_not_null(fgets(line, sizeof(line), err));
	cr_assert_str_eq(after_time(line), "level=info msg=shown k=v\n");
	cr_assert_null(fgets(line, sizeof(line), err));
}

Test(log, parse_helpers)
{
	enum log_level lvl = LOG_ERROR;
	enum log_format fmt = LOG_FORMAT_JSON;

	cr_assert_eq(log_parse_level("debug", &lvl), 0);
	cr_assert_eq(lvl, LOG_DEBUG);
	cr_assert_eq(log_parse_level("INFO", &lvl), 0);
	cr_assert_eq(lvl, LOG_INFO);
	cr_assert_eq(log_parse_level("warn", &lvl), 0);
	cr_assert_eq(lvl, LOG_WARN);
	cr_assert_eq(log_parse_level("warning", &lvl), 0);
	cr_assert_eq(lvl, LOG_WARN);
	cr_assert_eq(log_parse_level("error", &lvl), 0);
	cr_assert_eq(lvl, LOG_ERROR);
	cr_assert_eq(log_parse_level("verbose", &lvl), ERR_INVALID);
	cr_assert_eq(log_parse_level("", &lvl), ERR_INVALID);
	cr_assert_eq(log_parse_level("info ", &lvl), ERR_INVALID);
	cr_assert_eq(log_parse_level(NULL, &lvl), ERR_INVALID);
	cr_assert_eq(lvl, LOG_ERROR, "untouched on error");

	cr_assert_eq(log_parse_format("logfmt", &fmt), 0);
	cr_assert_eq(fmt, LOG_FORMAT_LOGFMT);
	cr_assert_eq(log_parse_format("json", &fmt), 0);
	cr_assert_eq(fmt, LOG_FORMAT_JSON);
	cr_assert_eq(log_parse_format("text", &fmt), ERR_INVALID);
	cr_assert_eq(log_parse_format(NULL, &fmt), ERR_INVALID);
	cr_assert_eq(fmt, LOG_FORMAT_JSON);
}

Test(log, sensitive_keys_are_redacted)
{
	char *text;

	capture(LOG_FORMAT_LOGFMT, LOG_INFO);
	log_info("auth", "user", "alice", "password", "hunter2", "GitToken",
		 "ghp_abc", "client_secret", "s3", "Authorization", "Bearer x",
		 "api_key", "k", NULL);
	text = capture_end();
	cr_assert_str_eq(after_time(text),
			 "level=info msg=auth user=alice password=[REDACTED] "
			 "GitToken=[REDACTED] client_secret=[REDACTED] "
			 "Authorization=[REDACTED] api_key=[REDACTED]\n");
	cr_assert_null(strstr(text, "hunter2"));
	free(text);
}

Test(log, url_credentials_are_redacted)
{
	assert_logfmt_value("https://user:ghp_secret@github.com/org/repo.git",
			    "https://REDACTED@github.com/org/repo.git");
	assert_logfmt_value("https://ghp_secret@github.com/x",
			    "https://REDACTED@github.com/x");
	assert_logfmt_value("fetch https://a:b@h1/x and http://c:d@h2 done",
			    "\"fetch https://REDACTED@h1/x and "
			    "http://REDACTED@h2 done\"");
	/* An '@' after the host is not user-info. */
	assert_logfmt_value("https://example.com/a@b",
			    "https://example.com/a@b");
	assert_logfmt_value("git@github.com:org/repo",
			    "git@github.com:org/repo");
}

Test(log, url_credentials_in_msg_are_redacted)
{
	char *text;

	capture(LOG_FORMAT_JSON, LOG_INFO);
	log_info("cloning https://x:tok@git.example.com/r", NULL);
	text = capture_end();
	cr_assert_not_null(strstr(text, "\"msg\":\"cloning "
					"https://REDACTED@git.example.com/r\""),
			   "%s", text);
	cr_assert_null(strstr(text, "tok"));
	free(text);
}

Test(log, keys_are_sanitized)
{
	char *line = logfmt_line("bad key=\"x\n", "v");

	cr_assert_str_eq(line, "level=info msg=m bad_key__x_=v\n");
	free(line);
	line = logfmt_line("", "v");
	cr_assert_str_eq(line, "level=info msg=m _=v\n");
	free(line);
	line = logfmt_line("ok.key/with-dash_1", "v");
	cr_assert_str_eq(line, "level=info msg=m ok.key/with-dash_1=v\n");
	free(line);
	line = logfmt_line("level", "error");
	cr_assert_str_eq(line, "level=info msg=m _level=error\n");
	free(line);
	line = logfmt_line("msg", "x");
	cr_assert_str_eq(line, "level=info msg=m _msg=x\n");
	free(line);
	line = logfmt_line("messages", "x");
	cr_assert_str_eq(line, "level=info msg=m messages=x\n");
	free(line);
}

Test(log, long_values_are_cut)
{
	size_t n = LOG_VALUE_MAX + 100;
	char *value = malloc(n + 1), *line, *want;

	cr_assert_not_null(value);
	memset(value, 'a', n);
	value[n] = '\0';
	/* A 2-byte character straddling the cut is not split. */
	value[LOG_VALUE_MAX - 1] = '\xc3';
	value[LOG_VALUE_MAX] = '\xa9';
	line = logfmt_line("k", value);
	want = malloc(LOG_VALUE_MAX + 100);
	cr_assert_not_null(want);
	snprintf(want, LOG_VALUE_MAX + 100, "level=info msg=m k=%.*s%s\n",
		 LOG_VALUE_MAX - 1, value, "...(truncated)");
	cr_assert_str_eq(line, want);
	free(line);
	free(want);
	free(value);
}

Test(log, variadic_and_macro_agree)
{
	char *text, *second;

	capture(LOG_FORMAT_LOGFMT, LOG_INFO);
	log_msg(LOG_INFO, "same", "k1", NULL, "k2", "v 2", NULL);
	log_info("same", "k1", NULL, "k2", "v 2", NULL);
	text = capture_end();
	second = strchr(text, '\n') + 1;
	cr_assert_str_eq(after_time(second),
			 "level=info msg=same k1= k2=\"v 2\"\n");
	second[0] = '\0';
	cr_assert_str_eq(after_time(text),
			 "level=info msg=same k1= k2=\"v 2\"\n");
	free(text);
}

Test(log, array_form_is_robust)
{
	const char *odd[] = {"m", "k1", "v1", "k2"};
	const char *stop[] = {"m", "k1", "v1", NULL, "k2", "v2"};
	char *text;

	capture(LOG_FORMAT_LOGFMT, LOG_INFO);
	log_msg_array(LOG_INFO, odd, 4);
	log_msg_array(LOG_INFO, stop, 6);
	log_msg_array(LOG_INFO, NULL, 0);
	text = capture_end();
	cr_assert(matches("^time=" TIME_RE " level=info msg=m k1=v1 k2=\n"
			  "time=" TIME_RE " level=info msg=m k1=v1\n"
			  "time=" TIME_RE " level=info msg=\n$",
			  text),
		  "%s", text);
	free(text);
}

Test(log, fields_beyond_the_limit_are_dropped)
{
	char keys[40][8];
	const char *args[1 + 2 * 40];
	char *text;
	size_t fields = 0;

	args[0] = "many";
	for (int i = 0; i < 40; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		args[1 + 2 * i] = keys[i];
		args[2 + 2 * i] = "v";
	}
	capture(LOG_FORMAT_LOGFMT, LOG_INFO);
	log_msg_array(LOG_INFO, args, 1 + 2 * 40);
	text = capture_end();
	for (const char *p = text; (p = strstr(p, "=v")); p++)
		fields++;
	cr_assert_eq(fields, LOG_MAX_FIELDS);
	cr_assert_not_null(strstr(text, " k30=v\n"));
	free(text);
}

#define THREADS 8
#define LINES	300

static void *log_worker(void *arg)
{
	char id[16], i_text[16];

	snprintf(id, sizeof(id), "%d", (int)(intptr_t)arg);
	for (int i = 0; i < LINES; i++) {
		snprintf(i_text, sizeof(i_text), "%d", i);
		log_info("concurrent line with some length to it", "thread", id,
			 "i", i_text, "pad",
			 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
			 NULL);
	}
	return NULL;
}

Test(log, lines_from_threads_never_mix)
{
	pthread_t tids[THREADS];
	int count[THREADS] = {0};
	size_t lines = 0;
	char *text, *save = NULL;

	capture(LOG_FORMAT_LOGFMT, LOG_INFO);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&tids[i], NULL, log_worker, (void *)(intptr_t)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(tids[i], NULL);
	text = capture_end();
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		int t, i;

		cr_assert(matches("^time=" TIME_RE
				  " level=info msg=\"concurrent "
				  "line with some length to it\" thread=[0-7] "
				  "i=[0-9]+ pad=x{50}$",
				  line),
			  "mixed line: %s", line);
		cr_assert_eq(sscanf(strstr(line, "thread="), "thread=%d i=%d",
				    &t, &i),
			     2);
		cr_assert_eq(i, count[t]++, "thread %d out of order", t);
		lines++;
	}
	cr_assert_eq(lines, THREADS * LINES);
	free(text);
}
