/*
 * Leader election against a real kube-emu, with short durations (lease
 * 1200 ms, renew deadline 800 ms, retry 200 ms unless a test says
 * otherwise). What is asserted: who leads (kube_leader_is_leader() and the
 * callbacks), the Lease's record in the API server, and /emu/stats
 * counts. Waits poll with generous deadlines; where a test must show that
 * something did NOT happen yet, it looks well inside a window several
 * times longer than the poll.
 */
#include <criterion/criterion.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "tests/helpers/emu.h"
#include "util/clock.h"

#define NS	"kube-system"
#define LEASE	"syncd-leader"
#define WAIT_MS 15000L
#define LEASES	"leases.coordination.k8s.io"

/* What one elector's callbacks heard (written from its thread). */
struct probe {
	atomic_int started;
	atomic_int stopped;
	atomic_int failed;
	atomic_int new_leader;
	atomic_int failed_at_stop; /* `failed` at the first stop, + 1 */
	char last_leader[128];	   /* written and read after a join only */
};

struct elector {
	struct kube_client *client;
	struct kube_leader *l;
	struct probe p;
	char id[64];
};

static struct test_emu emu;
static struct kube_config cfg;
static struct kube_client *client; /* the test's own reads and writes */
static struct kube_discovery *disc;
static struct elector el[2];
static struct err err = ERR_INIT;

static void on_started(void *ctx)
{
	struct probe *p = ctx;

	atomic_fetch_add(&p->started, 1);
}

static void on_stopped(void *ctx)
{
	struct probe *p = ctx;
	int none = 0;

	atomic_compare_exchange_strong(&p->failed_at_stop, &none,
				       atomic_load(&p->failed) + 1);
	atomic_fetch_add(&p->stopped, 1);
}

static void on_failed(const struct err *e, void *ctx)
{
	struct probe *p = ctx;

	(void)e;
	atomic_fetch_add(&p->failed, 1);
}

static void on_new_leader(const char *id, void *ctx)
{
	struct probe *p = ctx;

	snprintf(p->last_leader, sizeof(p->last_leader), "%s", id);
	atomic_fetch_add(&p->new_leader, 1);
}

static void setup(void)
{
	cr_assert_eq(test_emu_start(&emu, NULL), 0, "kube-emu did not start");
	cr_assert_eq(test_emu_config(&emu, &cfg), 0);
	cr_assert_eq(kube_client_new(&client, &cfg, NULL, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(kube_discovery_new(&disc, client, &err), 0);
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++) {
		kube_leader_free(el[i].l);
		kube_client_free(el[i].client);
		memset(&el[i], 0, sizeof(el[i]));
	}
	kube_discovery_free(disc);
	disc = NULL;
	kube_client_free(client);
	client = NULL;
	kube_config_release(&cfg);
	test_emu_stop(&emu);
	err_release(&err);
}

static const struct kube_resource *leases(void)
{
	const struct kube_resource *r = NULL;

	cr_assert_eq(kube_discovery_find(disc, "coordination.k8s.io", NULL,
					 "Lease", &r, &err),
		     0, "%s", err_msg(&err));
	return r;
}

/*
 * Elector i with its own client: one retry inside kube_request() at most,
 * so that one attempt stays within the renew deadline.
 */
static void elector_new(int i, long lease_ms, long renew_ms, long retry_ms)
{
	struct kube_client_options co = {.qps = 1000,
					 .burst = 1000,
					 .max_retries = 1,
					 .connect_timeout_ms = 2000,
					 .timeout_ms = 2000};
	struct kube_leader_options o = KUBE_LEADER_OPTIONS_INIT;

	snprintf(el[i].id, sizeof(el[i].id), "replica-%d", i);
	o.namespace = NS;
	o.name = LEASE;
	o.identity = el[i].id;
	o.lease_ms = lease_ms;
	o.renew_ms = renew_ms;
	o.retry_ms = retry_ms;
	o.started_leading = on_started;
	o.stopped_leading = on_stopped;
	o.new_leader = on_new_leader;
	o.failed = on_failed;
	o.ctx = &el[i].p;
	cr_assert_eq(kube_client_new(&el[i].client, &cfg, &co, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(kube_leader_new(&el[i].l, el[i].client, &o, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(kube_leader_identity(el[i].l), el[i].id);
}

static void elector_start(int i, long lease_ms, long renew_ms, long retry_ms)
{
	elector_new(i, lease_ms, renew_ms, retry_ms);
	cr_assert_eq(kube_leader_start(el[i].l, &err), 0, "%s", err_msg(&err));
}

static bool wait_leader(int i, long ms)
{
	uint64_t deadline = clk_mono_ms() + ms;

	while (!kube_leader_is_leader(el[i].l) && clk_mono_ms() < deadline)
		clk_sleep_ms(10);
	return kube_leader_is_leader(el[i].l);
}

/* How many times elector i stopped leading, once it has (or ms passed). */
static int wait_stopped(int i, long ms)
{
	uint64_t deadline = clk_mono_ms() + ms;

	while (atomic_load(&el[i].p.stopped) == 0 && clk_mono_ms() < deadline)
		clk_sleep_ms(10);
	return atomic_load(&el[i].p.stopped);
}

/* The Lease as stored now (new reference). */
static json_t *get_lease(void)
{
	json_t *lease = NULL;

	cr_assert_eq(kube_get(client, leases(), NS, LEASE, &lease, &err), 0,
		     "%s", err_msg(&err));
	return lease;
}

static const char *spec_str(json_t *lease, const char *key)
{
	const char *v = json_string_value(
		json_object_get(json_object_get(lease, "spec"), key));

	return v ? v : "";
}

static long long spec_int(json_t *lease, const char *key)
{
	json_t *v = json_object_get(json_object_get(lease, "spec"), key);

	cr_assert(json_is_integer(v), "spec.%s is not an integer", key);
	return json_integer_value(v);
}

/* "2026-11-29T10:00:00.123456Z": kube's MicroTime in UTC. */
static void assert_micro_time(const char *s)
{
	unsigned y, mo, d, h, mi, sec, us;
	char z = 0, end = 0;

	cr_assert_eq(strlen(s), 27, "not a MicroTime: \"%s\"", s);
	cr_assert_eq(sscanf(s, "%4u-%2u-%2uT%2u:%2u:%2u.%6u%c%c", &y, &mo, &d,
			    &h, &mi, &sec, &us, &z, &end),
		     8, "not a MicroTime: \"%s\"", s);
	cr_assert_eq(z, 'Z', "not UTC: \"%s\"", s);
}

TestSuite(leader, .init = setup, .fini = teardown, .timeout = 90);

Test(leader, alone_becomes_leader_and_renews)
{
	json_t *lease, *later = NULL;
	char acquired[64], renewed[64];
	uint64_t deadline;

	elector_start(0, 1200, 800, 200);
	cr_assert(wait_leader(0, WAIT_MS), "the only candidate never led");
	cr_assert_eq(atomic_load(&el[0].p.started), 1);
	cr_assert_eq(atomic_load(&el[0].p.stopped), 0);

	lease = get_lease();
	cr_assert_str_eq(spec_str(lease, "holderIdentity"), "replica-0");
	/* 1200 ms rounded up to whole seconds. */
	cr_assert_eq(spec_int(lease, "leaseDurationSeconds"), 2);
	cr_assert_eq(spec_int(lease, "leaseTransitions"), 0);
	assert_micro_time(spec_str(lease, "acquireTime"));
	assert_micro_time(spec_str(lease, "renewTime"));
	snprintf(acquired, sizeof(acquired), "%s",
		 spec_str(lease, "acquireTime"));
	snprintf(renewed, sizeof(renewed), "%s", spec_str(lease, "renewTime"));
	json_decref(lease);

	/* renewTime moves on while it leads; acquireTime stays. */
	deadline = clk_mono_ms() + WAIT_MS;
	do {
		clk_sleep_ms(50);
		json_decref(later);
		later = get_lease();
	} while (!strcmp(spec_str(later, "renewTime"), renewed) &&
		 clk_mono_ms() < deadline);
	cr_assert_str_neq(spec_str(later, "renewTime"), renewed,
			  "renewTime never advanced");
	cr_assert_gt(strcmp(spec_str(later, "renewTime"), renewed), 0,
		     "renewTime went back: %s after %s",
		     spec_str(later, "renewTime"), renewed);
	cr_assert_str_eq(spec_str(later, "acquireTime"), acquired);
	cr_assert_str_eq(spec_str(later, "holderIdentity"), "replica-0");
	cr_assert_eq(spec_int(later, "leaseTransitions"), 0);
	json_decref(later);
	cr_assert(kube_leader_is_leader(el[0].l));
	cr_assert_gt(test_emu_count(&emu, "update", LEASES, 200), 0);

	cr_assert_eq(kube_leader_stop(el[0].l, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_not(kube_leader_is_leader(el[0].l));
	cr_assert_eq(atomic_load(&el[0].p.stopped), 1);
}

Test(leader, two_electors_never_both_lead)
{
	uint64_t deadline;
	long samples = 0, led[2] = {0, 0};
	int leader;
	json_t *lease;

	elector_start(0, 1200, 800, 200);
	elector_start(1, 1200, 800, 200);
	deadline = clk_mono_ms() + WAIT_MS;
	while (!kube_leader_is_leader(el[0].l) &&
	       !kube_leader_is_leader(el[1].l) && clk_mono_ms() < deadline)
		clk_sleep_ms(10);

	deadline = clk_mono_ms() + 3000;
	while (clk_mono_ms() < deadline) {
		bool a = kube_leader_is_leader(el[0].l);
		bool b = kube_leader_is_leader(el[1].l);

		cr_assert_not(a && b, "both lead at sample %ld", samples);
		led[0] += a;
		led[1] += b;
		samples++;
		clk_sleep_ms(5);
	}
	cr_assert_gt(samples, 50);
	/* One of them led throughout: no hand-over without a failure. */
	cr_assert(led[0] == samples || led[1] == samples,
		  "leadership moved: %ld/%ld/%ld", led[0], led[1], samples);
	leader = led[0] ? 0 : 1;
	cr_assert_eq(atomic_load(&el[leader].p.started), 1);
	cr_assert_eq(atomic_load(&el[1 - leader].p.started), 0);

	lease = get_lease();
	cr_assert_str_eq(spec_str(lease, "holderIdentity"), el[leader].id);
	json_decref(lease);
	/* The standby kept looking at the Lease. */
	cr_assert_gt(test_emu_count(&emu, "get", LEASES, 200), 10);
}

Test(leader, release_hands_over_at_once)
{
	long long transitions;
	int first, second;
	json_t *lease;

	/*
	 * A 20 s lease: without the release the standby would wait that
	 * long, so taking over within the 8 s bound proves it was released.
	 */
	elector_start(0, 20000, 800, 200);
	cr_assert(wait_leader(0, WAIT_MS));
	elector_start(1, 20000, 800, 200);
	first = 0;
	second = 1;
	clk_sleep_ms(500); /* the standby has looked at the Lease */
	cr_assert_not(kube_leader_is_leader(el[second].l));

	lease = get_lease();
	cr_assert_str_eq(spec_str(lease, "holderIdentity"), el[first].id);
	cr_assert_eq(spec_int(lease, "leaseDurationSeconds"), 20);
	transitions = spec_int(lease, "leaseTransitions");
	json_decref(lease);

	cr_assert_eq(kube_leader_stop(el[first].l, true, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_not(kube_leader_is_leader(el[first].l));
	cr_assert_eq(atomic_load(&el[first].p.stopped), 1);

	cr_assert(wait_leader(second, 8000),
		  "the standby did not take the released Lease");
	lease = get_lease();
	cr_assert_str_eq(spec_str(lease, "holderIdentity"), el[second].id);
	cr_assert_eq(spec_int(lease, "leaseTransitions"), transitions + 1);
	cr_assert_eq(spec_int(lease, "leaseDurationSeconds"), 20);
	json_decref(lease);
	cr_assert_eq(atomic_load(&el[second].p.started), 1);
	/* The standby heard of replica-0 before it heard of itself. */
	cr_assert_geq(atomic_load(&el[second].p.new_leader), 2);
}

Test(leader, crashed_leader_is_replaced_after_lease_duration)
{
	long long transitions;
	json_t *lease;

	/* leaseDurationSeconds 3 */
	elector_start(0, 3000, 800, 200);
	cr_assert(wait_leader(0, WAIT_MS));
	elector_start(1, 3000, 800, 200);
	clk_sleep_ms(500);
	cr_assert_not(kube_leader_is_leader(el[1].l));
	lease = get_lease();
	transitions = spec_int(lease, "leaseTransitions");
	json_decref(lease);

	/* A crash: it stops renewing and does not release. */
	cr_assert_eq(kube_leader_stop(el[0].l, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_not(kube_leader_is_leader(el[0].l));

	/* Shortly after, the Lease is still replica-0's. */
	clk_sleep_ms(500);
	cr_assert_not(kube_leader_is_leader(el[1].l),
		      "took a Lease that had not expired");
	lease = get_lease();
	cr_assert_str_eq(spec_str(lease, "holderIdentity"), "replica-0");
	cr_assert_eq(spec_int(lease, "leaseTransitions"), transitions);
	json_decref(lease);
	cr_assert_eq(atomic_load(&el[1].p.started), 0);

	/* Once the lease duration has passed, the standby takes it. */
	cr_assert(wait_leader(1, WAIT_MS), "the standby never took over");
	lease = get_lease();
	cr_assert_str_eq(spec_str(lease, "holderIdentity"), "replica-1");
	cr_assert_eq(spec_int(lease, "leaseTransitions"), transitions + 1);
	json_decref(lease);
}

Test(leader, failed_renewals_stop_leading)
{
	uint64_t deadline;

	elector_start(0, 1200, 800, 200);
	cr_assert(wait_leader(0, WAIT_MS));
	/*
	 * Every update fails with 503 for 60 requests: at most 2 per
	 * attempt, one attempt per 200 ms, far longer than the 800 ms
	 * deadline.
	 */
	cr_assert_eq(test_emu_faults(&emu, "verb=update,resource=" LEASES
					   ",code=503,retryAfter=0,count=60"),
		     0);
	cr_assert_eq(wait_stopped(0, WAIT_MS), 1,
		     "stopped_leading was not called");
	cr_assert_not(kube_leader_is_leader(el[0].l));
	cr_assert_gt(atomic_load(&el[0].p.failed), 0);
	cr_assert_gt(test_emu_count(&emu, "update", LEASES, 503), 0);

	/* When the API answers again, it leads again (it is the holder). */
	deadline = clk_mono_ms() + 30000;
	while (atomic_load(&el[0].p.started) < 2 && clk_mono_ms() < deadline)
		clk_sleep_ms(10);
	cr_assert_eq(atomic_load(&el[0].p.started), 2);
	cr_assert(wait_leader(0, WAIT_MS));
}

/*
 * A partition drops packets silently: the renewal hangs until the
 * client's timeout (2 s, retried once), far past the renew deadline
 * (800 ms) and the lease (1200 ms). Leadership must end at the deadline,
 * while that request still hangs, not when it fails.
 */
Test(leader, hung_renewal_stops_leading_at_the_deadline)
{
	uint64_t deadline;
	int failed;

	elector_start(0, 1200, 800, 200);
	cr_assert(wait_leader(0, WAIT_MS));
	failed = atomic_load(&el[0].p.failed);
	cr_assert_eq(test_emu_faults(&emu, "verb=get,resource=" LEASES
					   ",latency=5s,count=2"),
		     0);
	cr_assert_eq(wait_stopped(0, WAIT_MS), 1,
		     "stopped_leading was not called");
	cr_assert_not(kube_leader_is_leader(el[0].l));
	cr_assert_eq(atomic_load(&el[0].p.failed_at_stop), failed + 1,
		     "stopped leading only after the hung request failed");

	/* Once the requests go through, it renews and leads again. */
	deadline = clk_mono_ms() + 30000;
	while (atomic_load(&el[0].p.started) < 2 && clk_mono_ms() < deadline)
		clk_sleep_ms(10);
	cr_assert_eq(atomic_load(&el[0].p.started), 2);
	cr_assert_gt(atomic_load(&el[0].p.failed), failed);
	cr_assert(wait_leader(0, WAIT_MS));
}

Test(leader, fresh_foreign_lease_is_not_taken)
{
	char now[40];
	struct timespec ts;
	struct tm tm;
	json_t *lease;
	uint64_t deadline;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%S.000000Z", &tm);
	lease = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:s, "
			  "s:i}}",
			  "apiVersion", "coordination.k8s.io/v1", "kind",
			  "Lease", "metadata", "name", LEASE, "namespace", NS,
			  "spec", "holderIdentity", "other-replica",
			  "leaseDurationSeconds", 60, "acquireTime", now,
			  "renewTime", now, "leaseTransitions", 3);
	cr_assert_eq(kube_create(client, leases(), lease, NULL, &err), 0, "%s",
		     err_msg(&err));
	json_decref(lease);
	cr_assert_eq(test_emu_reset_stats(&emu), 0);

	elector_start(0, 1200, 800, 200);
	/* Let it look at the Lease several times. */
	deadline = clk_mono_ms() + WAIT_MS;
	while (test_emu_count(&emu, "get", LEASES, 200) < 6 &&
	       clk_mono_ms() < deadline)
		clk_sleep_ms(20);
	cr_assert_geq(test_emu_count(&emu, "get", LEASES, 200), 6);
	cr_assert_not(kube_leader_is_leader(el[0].l));
	cr_assert_eq(atomic_load(&el[0].p.started), 0);
	cr_assert_eq(test_emu_count(&emu, "update", LEASES, 0), 0,
		     "wrote a Lease it does not hold");
	cr_assert_eq(test_emu_count(&emu, "create", LEASES, 0), 0);

	lease = get_lease();
	cr_assert_str_eq(spec_str(lease, "holderIdentity"), "other-replica");
	cr_assert_eq(spec_int(lease, "leaseTransitions"), 3);
	json_decref(lease);

	cr_assert_eq(kube_leader_stop(el[0].l, true, &err), 0);
	cr_assert_eq(atomic_load(&el[0].p.stopped), 0);
	cr_assert_str_eq(el[0].p.last_leader, "other-replica");
}

Test(leader, update_precondition_conflicts)
{
	json_t *lease, *stale, *fresh = NULL;

	lease = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion",
			  "coordination.k8s.io/v1", "kind", "Lease", "metadata",
			  "name", LEASE, "namespace", NS, "spec",
			  "holderIdentity", "a");
	cr_assert_eq(kube_create(client, leases(), lease, &stale, &err), 0,
		     "%s", err_msg(&err));
	cr_assert_eq(kube_create(client, leases(), lease, NULL, &err),
		     ERR_EXISTS);
	err_reset(&err);
	json_decref(lease);

	json_object_set_new(json_object_get(stale, "spec"), "holderIdentity",
			    json_string("b"));
	cr_assert_eq(kube_update(client, leases(), stale, &fresh, &err), 0,
		     "%s", err_msg(&err));
	cr_assert_str_eq(spec_str(fresh, "holderIdentity"), "b");
	/* `stale` still carries the first resourceVersion: refused. */
	json_object_set_new(json_object_get(stale, "spec"), "holderIdentity",
			    json_string("c"));
	cr_assert_eq(kube_update(client, leases(), stale, NULL, &err),
		     ERR_EXISTS);
	cr_assert(strstr(err_msg(&err), "modified"), "%s", err_msg(&err));
	err_reset(&err);
	json_decref(stale);
	json_decref(fresh);

	lease = get_lease();
	cr_assert_str_eq(spec_str(lease, "holderIdentity"), "b");
	json_decref(lease);
}

Test(leader, options_are_checked)
{
	struct kube_leader_options o = KUBE_LEADER_OPTIONS_INIT;
	struct kube_leader *l = NULL;
	const char *id;
	char host[256];

	o.namespace = NS;
	o.name = LEASE;
	o.lease_ms = 1000;
	o.renew_ms = 1000; /* not below the lease */
	cr_assert_eq(kube_leader_new(&l, client, &o, &err), ERR_INVALID);
	cr_assert_null(l);
	err_reset(&err);
	o.renew_ms = 800;
	o.retry_ms = 700; /* 1.2 * 700 > 800 */
	cr_assert_eq(kube_leader_new(&l, client, &o, &err), ERR_INVALID);
	err_reset(&err);
	o.name = NULL;
	o.retry_ms = 200;
	cr_assert_eq(kube_leader_new(&l, client, &o, &err), ERR_INVALID);
	err_reset(&err);
	o.name = LEASE;

	/* Defaults: client-go's durations, identity "HOST_<16 hex>". */
	cr_assert_eq(kube_leader_new(&l, client, &o, &err), 0, "%s",
		     err_msg(&err));
	id = kube_leader_identity(l);
	cr_assert_eq(gethostname(host, sizeof(host)), 0);
	host[sizeof(host) - 1] = '\0';
	cr_assert_eq(strncmp(id, host, strlen(host)), 0, "%s", id);
	cr_assert_eq(id[strlen(host)], '_');
	cr_assert_eq(strlen(id + strlen(host) + 1), 16);
	cr_assert_eq(strspn(id + strlen(host) + 1, "0123456789abcdef"), 16);
	cr_assert_not(kube_leader_is_leader(l));
	/* Stopping a never started elector does nothing. */
	cr_assert_eq(kube_leader_stop(l, true, &err), 0);
	kube_leader_free(l);
	cr_assert_eq(test_emu_count(&emu, NULL, LEASES, 0), 0);
}
