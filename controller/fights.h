/*
 * fights: fight detection for one app of `syncd run`.
 *
 * A fight is a field syncd writes that the same other manager changes
 * back again and again: a script looping `kubectl patch`, or a controller
 * whose field syncd takes under `foreignFields: override`. Healing it
 * forever would only make both sides write forever, so after `changes`
 * changes back by one manager within `window` syncd holds the field: it
 * is reported as fighting (with both managers) and left out of the apply
 * request, while the rest of the object is still healed.
 *
 * What counts: a pass sees a differing field that syncd would write and
 * that another manager owns (fights_observe()); it counts once per write
 * of syncd's (fights_written()), so resyncs that see the same change
 * again do not count twice. The first change counts too: a person's
 * one-off edit is 1, healed once and forgotten after the window.
 *
 * The state clears when the other side stops: when the field no longer
 * differs (the other manager put syncd's value back, or the desired value
 * now matches), when another manager owns it, or when `window` has passed
 * since it was held; syncd then writes it once more and counting starts
 * over. Against a fighter that never stops that is one write per window.
 *
 * One struct per app, used only by that app's pass (the queue never runs
 * an app on two workers), so there is no lock. Time is passed in
 * (monotonic milliseconds) so tests control it.
 */
#ifndef CONTROLLER_FIGHTS_H
#define CONTROLLER_FIGHTS_H

#include <stdbool.h>
#include <stdint.h>

#include "diff/diff.h"

/* Fields remembered per app; the oldest are forgotten beyond it. */
#define FIGHTS_MAX_ENTRIES 4096

struct fights;

struct fights_options {
	const char *self;   /* our field manager (copied) */
	unsigned changes;   /* changes back that make a fight; 0: never */
	uint64_t window_ms; /* the window they must fall in */
	/*
	 * Told when a fight starts (started true) or ends, with the object,
	 * the field's path and the other manager. NULL: nobody.
	 */
	void (*notify)(bool started, const struct diff_key *key,
		       const char *path, const char *other, unsigned changes,
		       void *ctx);
	void *ctx;
};

/* *out gets the detector (free with fights_free()); ERR_NOMEM. */
int fights_new(struct fights **out, const struct fights_options *opts,
	       struct err *err);
void fights_free(struct fights *f);

/*
 * The diff_options.hold callback (ctx: the struct fights): a new
 * diff_fight for a held field, else NULL.
 */
struct diff_fight *fights_hold(const struct diff_key *key, const char *path,
			       void *ctx);

/*
 * Count what the report of a pass shows (see above) at time `now_ms`.
 * Returns the number of fights that started or ended, so the caller can
 * compare again before writing: a field must not be written by the pass
 * that found it fighting, and one whose fight ended is written at once.
 * Fields no longer differing end their fights.
 */
unsigned fights_observe(struct fights *f, const struct diff_report *report,
			uint64_t now_ms);

/* syncd applied `key`: the fields it had in flight count as written. */
void fights_written(struct fights *f, const struct diff_key *key);

/* Fields held now. */
size_t fights_count(const struct fights *f);

/*
 * Milliseconds from `now_ms` until the first held field's window ends (a
 * pass then writes it again), at least 1; 0 when nothing is held.
 */
uint64_t fights_next_end_ms(const struct fights *f, uint64_t now_ms);

#endif
