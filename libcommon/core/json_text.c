/* JSON text followed without a parser (fmt/json_text.h). */
#include "fmt/json_text.h"

int fmt_json_ws(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

size_t fmt_json_skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && fmt_json_ws((unsigned char)s[i]))
		i++;
	return i;
}

size_t fmt_json_string_end(const char *s, size_t n, size_t i, int stop_at_control, int *escaped)
{
	int esc = 0;
	for (i++; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || (stop_at_control && c < 0x20))
			break;
		if (c == '\\') {
			esc = 1;
			i++;
		}
	}
	if (escaped)
		*escaped = esc;
	return i < n ? i : n;
}
