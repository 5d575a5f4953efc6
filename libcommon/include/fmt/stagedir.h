/* A private staging directory (issue 8): made once by mkdtemp (mode 0700) beside where its
 * files will go, files created in it relative to its descriptor (O_CREAT|O_EXCL|O_NOFOLLOW),
 * removed with everything in it on failure and on SIGINT, SIGTERM, SIGHUP and SIGPIPE; or its
 * files renamed into a destination directory all together, replacing existing files only once
 * every one of them is ready, and putting every replaced file back if a rename fails.
 *
 * One staging directory is live at a time per process (bundles are extracted one by one). */
#ifndef FMT_STAGEDIR_H
#define FMT_STAGEDIR_H

#include <stddef.h>
#include "fmt/err.h"

typedef struct fmt_stagedir {
	char *path;                  /* the directory mkdtemp made */
	int fd;                      /* its descriptor */
	char **names;                /* the plain file names it may hold (removed on signals) */
	size_t n_names;
} fmt_stagedir;

/* mkdtemp(parent/prefixXXXXXX) and open it; names are the plain file names (no '/', not "."
 * or "..") that will be created in it, copied. On failure nothing exists. */
fmt_kind fmt_stagedir_create(fmt_stagedir *s, const char *parent, const char *prefix,
			     const char *const *names, size_t n_names, fmt_err *e);

/* A new file names[i] in the directory, for writing (mode 0600); its descriptor or -1 with e
 * filled. */
int fmt_stagedir_create_file(fmt_stagedir *s, size_t i, fmt_err *e);

/* A path that opens names[i] through the directory's descriptor (/proc/self/fd/N/NAME), so a
 * rename of the directory cannot redirect it; the directory's path when /proc is absent.
 * malloc'd; NULL when out of memory. */
char *fmt_stagedir_file_path(const fmt_stagedir *s, size_t i);

/* Move every file into dest_dir under its name, with the signals above held back. Without
 * replace, an existing name is UsageError ("output exists") and nothing moves; with it,
 * existing files are replaced, each kept (hard link, or renamed aside) until the last file is
 * in place, and every one restored if any rename fails. A directory at a name is refused
 * before anything moves. On failure dest_dir is as it was. */
fmt_kind fmt_stagedir_commit(fmt_stagedir *s, const char *dest_dir, int replace, fmt_err *e);

/* Remove the files and the directory, and stop watching signals (also after a commit). */
void fmt_stagedir_remove(fmt_stagedir *s);

/* Remove the live staging directory's files and the directory, as the handler of the signals
 * above does (async-signal-safe: for the SIGBUS handler of the CLI layer). */
void fmt_stagedir_remove_live(void);

#endif
