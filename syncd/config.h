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

#include "renderers/render.h"
#include "util/err.h"
#include "util/log.h"

/* Largest configuration file read (bytes). */
#define CONFIG_MAX_FILE_SIZE (4u << 20)

/* Most apps one file may list. */
#define CONFIG_MAX_APPS 10000u

/* A NULL-terminated list of owned strings (v is never NULL). */
struct config_list {
	char **v;
	size_t len;
};

/* String pairs in file order. */
struct config_map {
	char **names;
	char **values;
	size_t len;
};

enum config_foreign {
	CONFIG_FOREIGN_RESPECT = 0,
	CONFIG_FOREIGN_OVERRIDE,
	CONFIG_FOREIGN_REPORT,
};

/* One `ignore` rule, as `syncd diff --ignore-file` takes them. */
struct config_ignore {
	char *group; /* NULL: any */
	char *kind;
	char *namespace;
	char *name;
	struct config_list json_pointers;
	struct config_list managers;
};

struct config_source {
	char *repo;
	char *revision;	      /* NULL: the remote's default branch */
	char *path;	      /* NULL: the repository's top */
	uint64_t interval_ms; /* default 1m */
	/* Credentials are only ever named here, never held. */
	char *username;
	char *username_file;
	char *password_file;
	char *password_env;
	char *token_file;
	char *token_env;
	char *ca_file;
	char *ssh_key_file;
	char *ssh_passphrase_file;
	char *known_hosts_file;
	char *allowed_signers_file; /* verifySignatures */
	char *gpg_keyring_file;
};

struct config_render {
	enum render_kind type; /* RENDER_AUTO by default */
	uint64_t timeout_ms;   /* 0: the renderers' default */
	/* directory */
	struct config_list include;
	struct config_list exclude;
	bool recurse; /* default true */
	/* helm */
	char *helm_release;
	struct config_list helm_values;
	struct config_map helm_set;
	bool helm_include_crds;
	char *helm_kube_version;
	/* jsonnet */
	char *jsonnet_file;
	struct config_map jsonnet_ext_vars;
	struct config_map jsonnet_ext_code;
	struct config_map jsonnet_tlas;
	struct config_map jsonnet_tla_code;
	struct config_list jsonnet_jpath;
	/* exec plugin */
	char *plugin_command;
	struct config_list plugin_args;
	struct config_map plugin_env;
	/* substitution */
	struct config_map vars;
	struct config_list vars_files;
	enum render_subst_mode substitute; /* default strict with vars,
					      else off */
};

struct config_app {
	char *name;
	unsigned line; /* where the app starts in the file */
	struct config_source source;
	struct config_render render;
	char *namespace; /* NULL: none */
	bool prune;	 /* default false */
	struct config_list prune_allow_kinds;
	unsigned prune_budget;		    /* default 50 */
	bool self_heal;			    /* default true */
	enum config_foreign foreign_fields; /* default respect */
	struct config_ignore *ignore;
	size_t nignore;
	json_t *raw; /* the app as written (a reload compares it) */
};

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
	struct config_app *apps;
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
bool config_same_app(const struct config_app *a, const struct config_app *b);

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
