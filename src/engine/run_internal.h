/* run_internal.h: what the files of paddock run share (run.c orchestrates; run_ask.c asks
 * a human before the command starts; run_credentials.c makes the run's credentials and starts
 * the gateway; exec_judge.c judges every exec inside). Not an API. */
#ifndef PADDOCK_RUN_INTERNAL_H
#define PADDOCK_RUN_INTERNAL_H

#include "run.h"

#include "audit.h"
#include "command_rules.h"
#include "exec_listener.h"
#include "gateway.h"
#include "policy.h"
#include "sandbox.h"
#include "session.h"
#include "store.h"
#include "approvals.h"

#include <event2/event.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

typedef struct run_state {
    const pdk_run_options *opt;
    pdk_policy *policy;
    char *state_dir;
    char *home;
    char **homes; /* whose credential locations are hidden (homes_of) */
    char *workspace;
    pdk_session *session;
    bool session_new;     /* prepared here, to be made on disk while the sandbox starts */
    bool session_created; /* made on disk by this run (removed again when the run fails) */
    bool command_may_run; /* let start: from here on nothing of the session is removed when
                           * something fails (the command may have written to it) */
    bool spare_done;      /* the idle steps have made the spares there is room for */

    pdk_sandbox_config cfg;
    pdk_command_verdict verdict;
    bool confined;
    bool readonly; /* the readonly profile: nothing written, the persistent home included */
    pdk_audit_spool *spool;   /* where this run's audit events go */
    struct exec_watch *watch; /* judging the execs inside, when the policy has rules */
    const pdk_gateway_module *gateway_module; /* the egress gateway, when the policy has a */
    pdk_gateway *gateway;                     /* network section */
    uint16_t *egress_ports;
    pdk_gateway_credential *credentials; /* values from the vault, placeholders of the run */
    char **credential_env;               /* NAME=placeholder for the sandbox */
    char **kept_placeholder_keys;        /* kept_placeholders()'s keys */
    char **placeholder_files;            /* in the state dir, bound in; removed at the end */
} run_state;

typedef struct pending_ask {
    struct exec_watch *w;
    pdk_approval_watch *watch; /* until answered (approvals.h) */
    uint64_t token;
    pid_t pid;
    char id[17];
    char *line;
    char **installer; /* the argv to remember as an installer's when approved, or NULL */
} pending_ask;

/* A process an `under` pattern matched when it started: its descendants are under it. */
typedef struct installer_proc {
    pid_t pid;
    unsigned long long start; /* a pid is reused */
    char **argv;              /* its first words */
} installer_proc;

#define MAX_INSTALLERS  256 /* alive at once; the oldest dead ones make room */
#define INSTALLER_WORDS 64  /* of an installer's argv kept for `under` */

/* What the run keeps for the exec listener: pdk__exec_judge and pdk__exec_connect_allowed run on
 * the listener's thread, pdk__exec_ask and the approvals' polling on the loop; lock guards what
 * both touch (the last refusal, the rule names, the installers). */
typedef struct exec_watch {
    run_state *st;
    pthread_mutex_t lock;
    pdk_exec_handler handler;
    bool first_seen;  /* the command's own exec, judged before the sandbox was made */
    bool nested_said; /* an agent's own sandbox was said to need nested_userns */
    pdk_exec_listener *listener;
    pdk_store *store;      /* for approvals, opened at the first ask */
    pending_ask **pending; /* the execs held while a human is asked */
    size_t npending;
    /* The last refusal: a shell tries each directory of PATH in turn, and the same command of
     * the same process right after is refused the same way, not asked again. */
    pid_t refused_pid;
    char *refused_line;
    char *refused_message;
    installer_proc *installers;
    size_t ninstallers;
    char **known_names; /* the commands the rules name (exec_target.h's identities) */
    char *path_list;    /* the sandbox's PATH */
    char **rule_names;  /* pdk_policy_describe_rule's, by rule + 1 (0: the default), made once */
} exec_watch;

/* run.c */
int pdk__run_open_spool(run_state *st, pdk_error *err);
json_t *pdk__run_argv_json(char *const *argv);
void pdk__run_add_verdict(const run_state *st, json_t *o);
bool pdk__run_is_nested_sandbox(const char *path, const char *argv0);
void pdk__run_say_nested_sandbox(const run_state *st, const char *what);

/* run_credentials.c */
int pdk__run_make_placeholders(run_state *st, pdk_error *err);
int pdk__run_start_gateway(run_state *st, pdk_error *err);
int pdk__run_setup_egress(run_state *st, pdk_error *err);
void pdk__run_free_credentials(run_state *st);
void pdk__run_remove_placeholders(run_state *st);

/* run_ask.c */
int pdk__run_refuse_denied(run_state *st, pdk_run_report *report, pdk_error *err);
int pdk__run_ask_human(run_state *st, pdk_run_report *report, pdk_error *err);
char *pdk__run_argv_line(char *const *argv);
int pdk__run_approval_ask(run_state *st, pdk_store *store, pdk_approval *a, pdk_error *err);

/* exec_judge.c */
char **pdk__exec_known_command_names(const pdk_command_rules *rules);
bool pdk__exec_connect_allowed(void *arg, pid_t pid, const char *call);
pdk_exec_answer pdk__exec_judge(void *arg, pdk_exec_request *req, char *message,
                                size_t message_size);
pdk_exec_answer pdk__exec_ask(void *arg, pdk_exec_listener *listener, pdk_exec_request *req,
                              uint64_t token, char *message, size_t message_size);
void pdk__exec_watch_free(exec_watch *w);

#endif
