/* vcpu-gaps: how often a thread that never yields loses its CPU, and for
 * how long.  It spins reading the time-stamp counter for SECONDS and counts
 * the gaps between two reads longer than 100 us and 1 ms.  In the test VM
 * (QEMU's software emulation, two vCPUs on two host cores) such a gap is
 * the vCPU itself stopped: a guest interrupt handled slowly, or the host
 * running something else on that core.  A benchmark whose two sides both
 * need their vCPU (a receiver returning flow-control credits) waits that
 * long too; bench/run-offcpu prints these lines beside its traces.
 *
 * usage: vcpu-gaps MHZ SECONDS LABEL
 *   MHZ      the TSC's rate (bench/lib.sh's bench_tsc reads it from
 *            /proc/cpuinfo)
 *   SECONDS  how long to spin (0.1 to 600)
 *   LABEL    the first word of the output line
 * Pin it with taskset.  Exit status 2 on a usage error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

static int number(const char *s, double lo, double hi, double *v)
{
	char *end;

	*v = strtod(s, &end);
	return end != s && !*end && *v >= lo && *v <= hi;
}

int main(int argc, char **argv)
{
	double mhz, secs;
	uint64_t t, last, end, gap, th100, th1m, n100 = 0, n1m = 0, sum = 0, max = 0;

	if (argc != 4 || !number(argv[1], 100, 100000, &mhz) || !number(argv[2], 0.1, 600, &secs)) {
		fprintf(stderr, "usage: %s MHZ SECONDS LABEL (MHZ 100-100000, SECONDS 0.1-600)\n",
			argv[0]);
		return 2;
	}
	th100 = (uint64_t)(100 * mhz);
	th1m = (uint64_t)(1000 * mhz);
	last = __rdtsc();
	end = last + (uint64_t)(secs * mhz * 1e6);
	while ((t = __rdtsc()) < end) {
		gap = t - last;
		last = t;
		if (gap <= th100)
			continue;
		n100++;
		n1m += gap > th1m;
		sum += gap;
		if (gap > max)
			max = gap;
	}
	printf("%s: gaps over 100 us %.1f a second (over 1 ms %.1f), %.2f %% of the time, "
	       "longest %.0f us\n",
	       argv[3], (double)n100 / secs, (double)n1m / secs, (double)sum / mhz / 1e4 / secs,
	       (double)max / mhz);
	return 0;
}
