/* speed: how fast this vCPU runs plain code right now.
 *
 * Times a fixed loop whose every step loads and stores a variable in
 * memory (about 2.4 ms a million steps on the test VM's emulated CPU at
 * full speed) and prints the nanoseconds per step.  A loop that stays in
 * registers runs near the host's own speed under QEMU's translation and
 * does not show the slow periods; one through memory (QEMU's software
 * TLB) does.  The benchmark scripts run it on each vCPU before and after
 * every measured run: the VM's vCPUs run at two speeds, for seconds at a
 * time and each on its own (1.3-2x apart for this loop, and about 2x
 * for an 8-byte RDMA READ on the slower vCPU, measured 2026-12-04), so a
 * run's figure says as much about the machine's speed at the time as about
 * the tool.
 *
 * usage: speed [STEPS]    (default 3000000, 1000 .. 1000000000)
 * Exit status: 0, or 2 on a usage error. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long steps = 3000000;
	volatile uint64_t acc = 0;
	uint64_t t0;
	char *end;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: speed [STEPS]\n");
		return 2;
	}
	if (argc == 2) {
		errno = 0;
		steps = strtol(argv[1], &end, 10);
		if (errno || *end || steps < 1000 || steps > 1000000000) {
			fprintf(stderr, "speed: STEPS '%s' is not a number in 1000 .. 1000000000\n",
				argv[1]);
			return 2;
		}
	}
	t0 = now_ns();
	for (long i = 0; i < steps; i++)
		acc += (uint64_t)i * 7;
	(void)acc;
	printf("%.3f\n", (double)(now_ns() - t0) / (double)steps);
	return 0;
}
