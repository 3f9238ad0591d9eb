/*
 * The states: their names, their order (an app is as healthy as its worst
 * object), and the reason's one-line cap.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "health/health.h"

Test(health_state, the_order_is_argo_cds_from_best_to_worst)
{
	static const enum health_state order[] = {
		HEALTH_HEALTHY,  HEALTH_SUSPENDED, HEALTH_PROGRESSING,
		HEALTH_MISSING,  HEALTH_DEGRADED,  HEALTH_UNKNOWN};
	size_t n = sizeof(order) / sizeof(*order);

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			cr_expect_eq(health_worse(order[i], order[j]), i > j,
				     "%s worse than %s",
				     health_state_name(order[i]),
				     health_state_name(order[j]));
}

Test(health_state, names_read_back_whatever_their_case)
{
	static const char *const names[] = {"Healthy",  "Suspended",
					    "Progressing", "Missing",
					    "Degraded", "Unknown"};
	enum health_state s = HEALTH_UNKNOWN;

	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		cr_expect_str_eq(health_state_name((enum health_state)i),
				 names[i]);
		cr_expect_eq(health_state_parse(names[i], &s), 0);
		cr_expect_eq(s, (enum health_state)i);
	}
	cr_expect_eq(health_state_parse("PROGRESSING", &s), 0);
	cr_expect_eq(s, HEALTH_PROGRESSING);
	s = HEALTH_HEALTHY;
	cr_expect_eq(health_state_parse("Fine", &s), ERR_INVALID);
	cr_expect_eq(health_state_parse(NULL, &s), ERR_INVALID);
	cr_expect_eq(s, HEALTH_HEALTHY, "untouched on error");
	cr_expect_str_eq(health_state_name((enum health_state)42), "Unknown");
}

Test(health_state, a_null_object_is_missing)
{
	struct health h;

	health_of(&h, NULL, NULL);
	cr_expect_eq(h.state, HEALTH_MISSING);
	cr_expect_str_eq(h.reason, "not in the cluster");
	health_release(&h);
	cr_expect_null(h.reason);
	cr_expect_eq(h.state, HEALTH_UNKNOWN);
}

/*
 * A condition message is the API server's to write: many lines, any
 * length. The reason stays one line, cut at a character boundary.
 */
Test(health_state, a_long_multiline_message_becomes_one_capped_line)
{
	json_t *obj = json_pack("{s:s, s:s, s:{s:[{s:s, s:s, s:s, s:s}]}}",
				"apiVersion", "example.com/v1", "kind",
				"Widget", "status", "conditions", "type",
				"Ready", "status", "False", "reason", "Broken",
				"message", "line one\nline two\r\ttab");
	char long_msg[4 * HEALTH_REASON_MAX];
	json_t *utf8;
	struct health h;
	size_t n;

	health_of(&h, obj, NULL);
	cr_expect_eq(h.state, HEALTH_DEGRADED);
	cr_expect_str_eq(h.reason, "Broken: line one line two  tab");
	health_release(&h);

	/* "é" is two bytes: a cut in the middle of one must step back. */
	for (n = 0; n + 2 < sizeof(long_msg); n += 2)
		memcpy(long_msg + n, "\xc3\xa9", 2);
	long_msg[n] = '\0';
	json_object_set_new(json_array_get(json_object_get(
					   json_object_get(obj, "status"),
					   "conditions"),
					   0),
			    "message", json_string(long_msg));
	health_of(&h, obj, NULL);
	n = strlen(h.reason);
	cr_expect_leq(n, HEALTH_REASON_MAX);
	cr_expect_str_eq(h.reason + n - 3, "...");
	cr_expect_neq((unsigned char)h.reason[n - 4], 0xc3,
		      "cut inside a character");
	utf8 = json_string(h.reason);
	cr_expect_not_null(utf8, "valid UTF-8");
	json_decref(utf8);
	health_release(&h);
	json_decref(obj);
}
