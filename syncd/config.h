/*
 * The controller's configuration file (`syncd run -c syncd.yaml`); every
 * key is described in docs/config.md.
 *
 * config_load() reads and checks the whole file before returning
 * anything: an invalid file yields no config at all, so the controller
 * never starts (or reloads) with half of one.
 */
#ifndef SYNCD_CONFIG_H
#define SYNCD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "syncd/app.h"
#include "util/err.h"
#include "util/log.h"

/* Largest configuration file read (bytes). */
#define CONFIG_MAX_FILE_SIZE (4u << 20)

/* Most apps one file may list. */
#define CONFIG_MAX_APPS 10000u

struct config {
	char *path;	     /* the file as given */
	uint64_t resync_ms;  /* default 3m */
	unsigned workers;    /* default 2 */
	char *field_manager; /* default "syncd" */
	char *kubeconfig;    /* NULL: in-cluster, then default */
	char *context;
	char *cache_dir;	    /* NULL: the default cache */
	double qps;		    /* default 50 */
	unsigned burst;		    /* default 100 */
	bool watch;		    /* default true */
	enum log_format log_format; /* default logfmt */
	enum log_level log_level;   /* default info */
	char *listen;		    /* default ":8080" */
	/*
	 * fightDetection: a field changed back `changes` times (default 3;
	 * 0: never) within `window` (default 10m) after syncd wrote it is
	 * held, not written, until the fight ends.
	 */
	unsigned fight_changes;
	uint64_t fight_window_ms;
	char *api_token_file;	  /* api.tokenFile: POST .../sync */
	char *github_secret_file; /* webhook.githubSecretFile */
	char *gitlab_token_file;  /* webhook.gitlabTokenFile */
	bool events;		  /* Kubernetes Events; default true */
	struct {
		bool enabled;	 /* default false */
		char *namespace; /* NULL: the pod's namespace, else default */
		char *name;	 /* NULL: "syncd" */
		uint64_t lease_ms, renew_ms, retry_ms; /* 15s, 10s, 2s */
	} leader;
	struct app_spec *apps; /* the apps, in file order */
	size_t napps;
	json_t *raw_globals; /* the top level less `apps`, or NULL */
};

/*
 * Whether a reload from `a` to `b` can keep the running controller: the
 * settings outside `apps` are the same (and the file is the same, so
 * relative paths mean the same files).
 */
bool config_same_globals(const struct config *a, const struct config *b);

/* Whether two apps are configured exactly alike. */
bool config_same_app(const struct app_spec *a, const struct app_spec *b);

/*
 * Read and check `path`. Relative file references in the file (kubeconfig,
 * cacheDir, source credentials, varsFiles) are taken relative to the
 * directory of `path`. Every problem is reported as one line
 * "FILE:LINE: key.path: cause" in `err`; on any problem returns a
 * negative code and leaves *out NULL.
 */
int config_load(struct config **out, const char *path, struct err *err);

void config_free(struct config *cfg);

/*
 * Parse a duration such as "30s", "3m", "1h30m" or "250ms" into
 * milliseconds. 0 on success; ERR_INVALID otherwise (no message).
 */
int config_parse_duration(const char *s, uint64_t *ms);

#endif
