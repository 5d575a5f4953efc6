#include <pthread.h>
#include <stddef.h>
#include "fmt/meter.h"

/* Passes may run on pool threads, so one lock serialises the calls to the follower; a pass
 * nobody follows does not take it. */
static void *_Atomic meter_ctx;
static fmt_meter_fn meter_fn;
static pthread_mutex_t meter_lock = PTHREAD_MUTEX_INITIALIZER;

static void tell(uint64_t planned, uint64_t done)
{
	if (!meter_ctx)
		return;
	pthread_mutex_lock(&meter_lock);
	if (meter_ctx && meter_fn)
		meter_fn(meter_ctx, planned, done);
	pthread_mutex_unlock(&meter_lock);
}

void fmt_meter_planned(uint64_t bytes)
{
	tell(bytes, 0);
}

void fmt_meter_done(uint64_t bytes)
{
	tell(0, bytes);
}

void fmt_meter_follow(fmt_meter_fn fn, void *ctx)
{
	pthread_mutex_lock(&meter_lock);
	meter_fn = fn;
	meter_ctx = fn ? ctx : NULL;
	pthread_mutex_unlock(&meter_lock);
}

void fmt_meter_unfollow(const void *ctx)
{
	if (meter_ctx != ctx)
		return;
	pthread_mutex_lock(&meter_lock);
	if (meter_ctx == ctx) {
		meter_ctx = NULL;
		meter_fn = NULL;
	}
	pthread_mutex_unlock(&meter_lock);
}
