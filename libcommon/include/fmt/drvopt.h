/* Options a format driver declares for itself (fmt-convert's --apr-layout, --delimiter, --type,
 * ...): a table in the driver's own file, parsed by the driver into a struct of its own, which
 * reaches it again through the reading and writing options (fmt_dataset_opts.options,
 * fmt_write_opts.options). The command-line runner shows them under a heading per format. */
#ifndef FMT_DRVOPT_H
#define FMT_DRVOPT_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "fmt/err.h"

/* What the option is for: reading the driver's files, writing them, or both. */
enum { FMT_DRVOPT_READ = 1u << 0, FMT_DRVOPT_WRITE = 1u << 1 };

/* What completes its value. */
typedef enum fmt_drvopt_complete {
	FMT_DRVOPT_FREE = 0,   /* a number, a name, a character: nothing to offer */
	FMT_DRVOPT_FILE,       /* a file; words may hold a glob ("*.json") */
	FMT_DRVOPT_ENV,        /* the name of an environment variable */
	FMT_DRVOPT_WORDS,      /* one of words ("a b c"), values or words_from() */
} fmt_drvopt_complete;

/* A value of a FMT_DRVOPT_WORDS option with what it means. */
typedef struct fmt_drvopt_value {
	const char *word;      /* NULL ends the list */
	const char *help;
} fmt_drvopt_value;

/* What parse returns besides -1 (a bad value, e says why in the option's words): */
enum {
	FMT_DRVOPT_GIVEN = 0,   /* kept: the option is given (refused where no driver uses it) */
	FMT_DRVOPT_NEUTRAL = 1, /* kept, but it asks what every format does anyway (-c none): not
				 * refused where no driver uses it */
};

typedef struct fmt_drvopt {
	const char *name;      /* long name without "--"; NULL ends the table */
	const char *arg;       /* its value's name in --help ("FILE"), NULL for a flag */
	const char *help;      /* --help text; '\n' continues it on the next line */
	unsigned use;          /* FMT_DRVOPT_READ | FMT_DRVOPT_WRITE */
	fmt_drvopt_complete complete;
	const char *words;     /* WORDS: the values; FILE: a glob or NULL */
	const fmt_drvopt_value *values;         /* WORDS with a description of each, instead */
	void (*words_from)(char *buf, size_t n); /* WORDS the driver lists at run time ("a b c") */
	/* Check arg (NULL for a flag) and keep it in values, the driver's own struct:
	 * FMT_DRVOPT_GIVEN, FMT_DRVOPT_NEUTRAL, or -1 with e filled (a usage error). */
	int (*parse)(void *values, const char *arg, fmt_err *e);
	unsigned flags;        /* FMT_DRVOPT_REPEAT: it may be given more than once */
} fmt_drvopt;

enum { FMT_DRVOPT_REPEAT = 1u << 0 };

/* A driver's options (fmt_driver.options, fmt_table_driver.options). */
typedef struct fmt_drvopts {
	const fmt_drvopt *list;  /* ended by { .name = NULL }; at most 64 */
	size_t size;             /* bytes of the struct parse fills, zeroed before the first */
	/* Read what the options name (a --schema file) before the input is opened; NULL: nothing. */
	fmt_kind (*load)(void *values, fmt_err *e);
	/* Free what load kept (and forget it: load may come again); NULL: nothing. */
	void (*free)(void *values);
} fmt_drvopts;

/* The values given to one driver. */
typedef struct fmt_drvopt_set {
	const fmt_drvopts *of;
	void *values;            /* of->size bytes */
	uint64_t given;          /* bit i: of->list[i] was given (not NEUTRAL) */
} fmt_drvopt_set;

#define FMT_DRVOPT_MAX_SETS 16

/* Every driver's values of a command line; zero-initialise. */
typedef struct fmt_drvopt_sets {
	fmt_drvopt_set set[FMT_DRVOPT_MAX_SETS];
	size_t n;
} fmt_drvopt_sets;

/* Parse arg for option i of of into its driver's values (made on first use): 0, or -1 with e
 * filled (a bad value: UsageError in the option's words). */
int fmt_drvopt_parse(fmt_drvopt_sets *s, const fmt_drvopts *of, size_t i, const char *arg, fmt_err *e);
/* The values a driver's options were parsed into, or NULL when none was given (its defaults).
 * s may be NULL. */
const void *fmt_drvopt_values(const fmt_drvopt_sets *s, const fmt_drvopts *of);
/* Every driver's load, in the order their first option was given; unload frees what they
 * read (a conversion's last step), sets_free the values too. */
fmt_kind fmt_drvopt_load(fmt_drvopt_sets *s, fmt_err *e);
void fmt_drvopt_unload(fmt_drvopt_sets *s);
void fmt_drvopt_sets_free(fmt_drvopt_sets *s);

/* For a parse of a FMT_DRVOPT_WORDS option with values: the index of arg among them, or -1
 * with e filled ("--NAME takes a, b or c"). */
int fmt_drvopt_word(const fmt_drvopt_value *values, const char *name, const char *arg, fmt_err *e);

/* A compression named NAME or NAME:LEVEL (--compression) among codecs[0..n): the index of NAME,
 * and in *level the LEVEL, from 1 to the codec's max (0: none given; a codec whose max is 0 takes
 * none); "zstd-max" is zstd at level 19. -1 for anything else. */
typedef struct fmt_codec_name {
	const char *name;
	int max;
} fmt_codec_name;
int fmt_codec_name_parse(const char *spec, const fmt_codec_name *codecs, size_t n, int *level);

/* The JSON object in the file at path, for a load (what: the option, "--schema"); not an
 * object is UsageError naming the file. */
fmt_kind fmt_drvopt_load_json(const char *path, const char *what, json_t **out, fmt_err *e);

#endif
