/* A network file's bytes in memory, as a format of whole networks (FMT_CAP_NETWORK) holds it:
 * the file itself when it is one already, else the graph its driver writes (write_network).
 * What fmt-convert's --embed-tests and --calibration start from. */
#include "fmt/drvopt.h"
#include "fmt/registry.h"
#include "pipeline_internal.h"

/* The largest network read whole: the size fields of .nk payloads are 32-bit. */
#define MAX_NETWORK_FILE (1ull << 33)

fmt_kind fmt_network_writable(const fmt_model *in, const fmt_driver *to, fmt_err *e)
{
	if (!in->driver->write_network)
		return fmt_fail(e, FMT_UNSUPPORTED, "%s holds tensors only: a %s file is a network, made from a graph "
				"(an ONNX model)", in->driver->title, to->title);
	return FMT_OK;
}

static fmt_kind written_by_driver(const fmt_model *in, const fmt_driver *to, const fmt_drvopt_sets *options,
				  uint8_t **bytes, size_t *n, fmt_err *e)
{
	fmt_write_opts wo = { .threads = 1, .options = options };
	fmt_sink sink;
	fmt_kind k = fmt_network_writable(in, to, e);
	if (k == FMT_OK)
		k = fmt_sink_open_memory(&sink, e);
	if (k != FMT_OK)
		return k;
	k = in->driver->write_network(in, to, &sink, &wo, e);
	if (k == FMT_OK)
		return fmt_sink_take_memory(&sink, bytes, n, e);
	fmt_sink_abort(&sink);
	return k;
}

fmt_kind fmt_pipeline_network_bytes(const char *input, const fmt_driver *to, const fmt_drvopt_sets *options,
				    uint8_t **bytes, size_t *n, fmt_err *e)
{
	fmt_model in;
	*bytes = NULL;
	*n = 0;
	fmt_kind k = fmt_model_open(&in, input, NULL, e);
	if (k != FMT_OK)
		return k;
	if (!to && fmt_driver_can(in.driver, FMT_CAP_NETWORK))
		to = in.driver;
	if (!to) {
		k = fmt_fail(e, FMT_USAGE, "cannot tell which network format to make of %s: name the output with its "
			     "extension", in.driver->title);
	} else if (in.driver == to && fmt_drvopt_values(options, to->options)) {
		k = fmt_fail(e, FMT_USAGE, "the %s writer's options apply to a graph converted to it: this is a %s file "
			     "already", to->title, to->title);
	} else if (in.driver == to) {
		char *data = NULL;
		k = fmt_read_file(input, MAX_NETWORK_FILE, &data, n, e);
		*bytes = (uint8_t *)data;
	} else {
		k = written_by_driver(&in, to, options, bytes, n, e);
		if (k != FMT_OK)
			fmt_err_file(e, input);
	}
	fmt_model_free(&in);
	return k;
}
