/* doctor.h: probes of what this kernel and machine offer, and what paddock does about
 * what is missing. Each probe runs the real thing (a user namespace is created, an overlay
 * mounted in one, a seccomp filter installed) in a short-lived child. */
#ifndef PADDOCK_DOCTOR_H
#define PADDOCK_DOCTOR_H

#include "error.h"
#include "util.h"

typedef enum pdk_check_status {
    PDK_CHECK_OK = 0,
    PDK_CHECK_WARN = 1, /* works with less; paddock says what it does instead */
    PDK_CHECK_FAIL = 2, /* a hard requirement is missing: paddock run refuses */
} pdk_check_status;

typedef struct pdk_check {
    const char *name; /* stable key: "userns", "landlock", ... */
    pdk_check_status status;
    char detail[512]; /* what was found */
    char action[512]; /* what paddock does about it, or what to do; may be empty */
    int value;        /* a number where one applies (the Landlock ABI); else -1 */
} pdk_check;

/* A PATH entry, and whether the sandbox sees it (visibility.h). */
typedef struct pdk_path_entry {
    char *dir;    /* as written in PATH ("" is the current directory) */
    bool exists;  /* a directory on the host */
    bool seen;    /* commands there resolve inside as on the host */
    char *why;    /* when not: why not */
    char *advice; /* ... and what to do */
} pdk_path_entry;

typedef struct pdk_doctor_report {
    pdk_check checks[16];
    size_t count;
    bool ok;              /* no FAIL */
    pdk_path_entry *path; /* the PATH a sandbox of the policy gets, entry by entry */
    size_t path_count;
} pdk_doctor_report;

typedef struct pdk_doctor_options {
    const char *policy_path; /* NULL: the built-in default */
} pdk_doctor_options;

/* Every probe, and the PATH a sandbox of the policy gets (in the current directory as its
 * workspace). -1 with err only when the policy cannot be loaded. */
int pdk_doctor_run(pdk_doctor_report *report, const pdk_doctor_options *options, pdk_error *err);
void pdk_doctor_report_free(pdk_doctor_report *report);
const char *pdk_check_status_name(pdk_check_status status);

#endif
