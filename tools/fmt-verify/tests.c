/* --run-tests: a file's embedded regression tests, run by the tool its driver names (nk-run for
 * .nk), found beside fmt-verify itself or else on PATH. The runner reports in JSON (one object
 * per case, then a summary; its error as an object on stderr), read back here into the counts
 * and failing cases of fmt-verify's own report; nothing of it is passed through. */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "verify.h"

extern char **environ;

/* "<directory of this executable>/name" when that exists, else name (looked up on PATH). */
static void runner_path(const char *name, char *out, size_t n)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len > 0) {
		self[len] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(out, n, "%s/%s", self, name);
			if (access(out, X_OK) == 0)
				return;
		}
	}
	snprintf(out, n, "%s", name);
}

/* Run argv with stdout and stderr into the temporary files out and err; *status as waitpid's. */
static fmt_kind spawn_wait(char **argv, FILE *out, FILE *err, int *status, fmt_err *e)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fileno(out), STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, fileno(err), STDERR_FILENO);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return fmt_fail(e, FMT_IO, "cannot run %s for the embedded tests: %s", argv[0], strerror(rc));
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return fmt_fail(e, FMT_IO, "waiting for %s: %s", argv[0], strerror(errno));
	return FMT_OK;
}

/* What a failing case says, as the runner's text line says it. */
static json_t *failure_of(json_t *c)
{
	static const char *const keys[] = { "case", "name", "reason", "max_error", "tolerance", "argmax",
					     "expected_argmax" };
	json_t *f = json_object();
	for (size_t i = 0; f && i < sizeof keys / sizeof keys[0]; i++) {
		json_t *v = json_object_get(c, keys[i]);
		if (v)
			json_object_set(f, keys[i], v);
	}
	return f;
}

/* The runner's stdout: count the case objects into t; *summary = 1 when its summary came. */
static fmt_kind read_cases(FILE *out, verify_tests *t, int *summary, fmt_err *e)
{
	char *line = NULL;
	size_t cap = 0;
	fmt_kind k = FMT_OK;
	rewind(out);
	while (k == FMT_OK && getline(&line, &cap, out) > 0) {
		json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
		json_t *pass = json_object_get(j, "pass");
		if (!json_is_object(j)) {
			k = fmt_fail(e, FMT_INTERNAL, "the test runner wrote a line that is not a JSON object");
		} else if (json_is_boolean(pass)) {
			t->run++;
			if (json_is_true(pass)) {
				t->passed++;
			} else {
				t->failed++;
				json_array_append_new(t->failures, failure_of(j));
			}
		} else if (json_object_get(j, "passed")) {
			*summary = 1;
		}
		json_decref(j);
	}
	free(line);
	return k;
}

/* The "message" of the runner's JSON error object on err, into msg (empty when there is none). */
static void read_message(FILE *err, char *msg, size_t n)
{
	char *line = NULL;
	size_t cap = 0;
	msg[0] = '\0';
	rewind(err);
	while (getline(&line, &cap, err) > 0) {
		json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
		const char *m = json_string_value(json_object_get(j, "message"));
		if (m)
			snprintf(msg, n, "%s", m);
		json_decref(j);
	}
	free(line);
}

/* TestFailed naming each failing case and what differed. */
static fmt_kind fail_cases(const verify_tests *t, const char *runner, const char *path, fmt_err *e)
{
	char list[FMT_ERR_MSG_MAX] = "";
	size_t used = 0;
	for (size_t i = 0; i < json_array_size(t->failures) && used < sizeof list; i++) {
		json_t *f = json_array_get(t->failures, i);
		const char *name = json_string_value(json_object_get(f, "name"));
		const char *reason = json_string_value(json_object_get(f, "reason"));
		int n = snprintf(list + used, sizeof list - used, "%s%s: %s", i ? "; " : "", name ? name : "?",
				 reason ? reason : "?");
		used += n > 0 ? (size_t)n : 0;
	}
	return fmt_fail(e, FMT_TEST_FAILED, "embedded tests failed: %u of %u case%s (%s); %s --test %s shows each case",
			t->failed, t->run, t->run == 1 ? "" : "s", list, runner, path);
}

/* The error for a runner that did not exit 0: its failing cases, or what it said. */
static fmt_kind runner_failed(const verify_tests *t, const char *runner, const char *path, int status, FILE *err,
			      fmt_err *e)
{
	char msg[FMT_ERR_MSG_MAX];
	if (!WIFEXITED(status))
		return fmt_fail(e, FMT_INTERNAL, "%s was killed by signal %d", runner, WTERMSIG(status));
	read_message(err, msg, sizeof msg);
	int code = WEXITSTATUS(status);
	if (code == FMT_TEST_FAILED && t->failed)
		return fail_cases(t, runner, path, e);
	if (code == FMT_TEST_FAILED) /* no case ran: the file carries none */
		return fmt_fail(e, FMT_TEST_FAILED, "%s", msg[0] ? msg : "no embedded tests");
	return fmt_fail(e, (fmt_kind)code, "%s could not run the embedded tests: %s", runner, msg[0] ? msg : "no message");
}

fmt_kind run_embedded_tests(const fmt_model *m, const char *path, const char *max_work, verify_tests *t,
			    fmt_err *e)
{
	const char *runner = m->driver->test_runner;
	if (!runner)
		return FMT_OK;
	char exe[PATH_MAX + 64];
	runner_path(runner, exe, sizeof exe);
	char *argv[8];
	size_t n_args = 0;
	argv[n_args++] = exe;
	argv[n_args++] = "--test";
	argv[n_args++] = "--json";
	if (max_work) {
		argv[n_args++] = "--max-work";
		argv[n_args++] = (char *)max_work;
	}
	argv[n_args++] = "--";
	argv[n_args++] = (char *)path;
	argv[n_args] = NULL;
	FILE *out = tmpfile(), *err = tmpfile();
	int status = 0, summary = 0;
	fmt_kind k = out && err ? FMT_OK : fmt_fail(e, FMT_IO, "cannot create a temporary file: %s", strerror(errno));
	if (k == FMT_OK)
		k = spawn_wait(argv, out, err, &status, e);
	if (k == FMT_OK && !(t->failures = json_array()))
		k = fmt_fail(e, FMT_IO, "out of memory");
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	if (k == FMT_OK && (code == 0 || code == FMT_TEST_FAILED)) {
		k = read_cases(out, t, &summary, e);
		t->ran = k == FMT_OK;
		if (k == FMT_OK && !summary)
			k = fmt_fail(e, FMT_INTERNAL, "%s --test gave no summary", runner);
	}
	if (k == FMT_OK && code != 0)
		k = runner_failed(t, runner, path, status, err, e);
	if (out)
		fclose(out);
	if (err)
		fclose(err);
	return k;
}

json_t *tests_json(const verify_tests *t)
{
	return json_pack("{s:I,s:I,s:I,s:O}", "run", (json_int_t)t->run, "passed", (json_int_t)t->passed, "failed",
			 (json_int_t)t->failed, "failures", t->failures);
}

void verify_tests_free(verify_tests *t)
{
	json_decref(t->failures);
	memset(t, 0, sizeof *t);
}
