/* The pipeline's warnings and --verbose notes go through the caller's hooks. */
#include <stdarg.h>
#include <stdio.h>
#include "pipeline_internal.h"

__attribute__((format(printf, 3, 0)))
static void say(void (*hook)(const fmt_convert_opts *, const char *), const fmt_convert_opts *o,
		const char *format, va_list ap)
{
	char msg[FMT_ERR_MSG_MAX];
	if (!hook)
		return;
	vsnprintf(msg, sizeof msg, format, ap);
	hook(o, msg);
}

void fmt_pipeline_warn(const fmt_convert_opts *o, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	say(o->warning, o, format, ap);
	va_end(ap);
}

void fmt_pipeline_info(const fmt_convert_opts *o, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	say(o->info, o, format, ap);
	va_end(ap);
}
