/* Runner for the libcommon unit tests. Usage: unit-tests [SUBSTRING] runs the tests whose
 * name or file contains SUBSTRING. */
#include <dirent.h>
#include <stdlib.h>
#include "unit.h"

#define UNIT_MAX 1024

struct unit_test { const char *name, *file; unit_fn fn; };
static struct unit_test tests[UNIT_MAX];
static int n_tests;
int unit_current_failed;
int unit_quiet;
char unit_failures[8192];
static const char *current_name;

void unit_register(const char *name, const char *file, unit_fn fn)
{
	if (n_tests < UNIT_MAX)
		tests[n_tests++] = (struct unit_test){ name, file, fn };
}

void unit_fail(const char *file, int line, const char *expr)
{
	unit_current_failed = 1;
	if (unit_quiet) {
		size_t used = strlen(unit_failures);
		snprintf(unit_failures + used, sizeof unit_failures - used, "%s\n", expr);
		return;
	}
	printf("FAIL %s (%s:%d): %s\n", current_name, file, line, expr);
}

char *unit_tmp_dir(void)
{
	static char path[64];
	snprintf(path, sizeof path, "/tmp/fmtkit-unit-XXXXXX");
	return mkdtemp(path);
}

int unit_dir_entries(const char *dir)
{
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *ent;
	while (d && (ent = readdir(d)))
		n += strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;
	for (int i = 0; i < n_tests; i++) {
		if (filter && !strstr(tests[i].name, filter) && !strstr(tests[i].file, filter))
			continue;
		current_name = tests[i].name;
		unit_current_failed = 0;
		tests[i].fn();
		if (unit_current_failed)
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
