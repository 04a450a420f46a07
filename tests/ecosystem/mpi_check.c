/*
 * mpi_check.c — a small MPI program for tests/ecosystem/mpi.sh, built with
 * mpicc against libopenmpi-dev: a ping-pong between ranks 0 and 1 over
 * sizes 8 B to 256 KiB (every byte checked; the round trip timed after a
 * tenth as many untimed warm-up rounds, which also take the wire-up), then
 * MPI_Allreduce of a vector over all ranks (every element checked against
 * the sum computed by hand), then a barrier.  Prints one line per size and
 * "mpi_check: ok" from rank 0; any mismatch aborts the job.  Usage:
 * mpi_check [ROUNDS [LINGER_MS]].
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what, long at)
{
	fprintf(stderr, "mpi_check: %s at %ld\n", what, at);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned char pattern(int size, int iter, long i)
{
	return (unsigned char)(size * 7 + iter * 13 + i * 31);
}

static void pingpong(int rank, int iters)
{
	const int max = 1 << 18;
	unsigned char *buf = malloc(max);

	if (!buf)
		die("malloc", max);
	for (int size = 8; size <= max; size *= 8) {
		int warmup = iters / 10 + 1;
		double t0 = 0;

		for (int it = 0; it < warmup + iters; it++) {
			if (it == warmup)
				t0 = MPI_Wtime();
			if (rank == 0) {
				for (long i = 0; i < size; i++)
					buf[i] = pattern(size, it, i);
				MPI_Send(buf, size, MPI_BYTE, 1, it, MPI_COMM_WORLD);
				MPI_Recv(buf, size, MPI_BYTE, 1, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (long i = 0; i < size; i++)
					if (buf[i] != (unsigned char)~pattern(size, it, i))
						die("ping-pong reply mismatch", i);
			} else if (rank == 1) {
				MPI_Recv(buf, size, MPI_BYTE, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (long i = 0; i < size; i++) {
					if (buf[i] != pattern(size, it, i))
						die("ping-pong request mismatch", i);
					buf[i] = (unsigned char)~buf[i];
				}
				MPI_Send(buf, size, MPI_BYTE, 0, it, MPI_COMM_WORLD);
			}
		}
		if (rank == 0)
			printf("mpi_check: pingpong %8d B  %9.2f us round trip\n", size,
			       (MPI_Wtime() - t0) * 1e6 / iters);
	}
	free(buf);
}

static void allreduce(int rank, int nranks)
{
	enum { N = 100000 };
	long *in = malloc(N * sizeof(*in)), *out = malloc(N * sizeof(*out));

	if (!in || !out)
		die("malloc", N);
	for (long i = 0; i < N; i++)
		in[i] = i * (rank + 1);
	MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	/* sum over r of i * (r + 1) = i * n (n + 1) / 2 */
	for (long i = 0; i < N; i++)
		if (out[i] != i * nranks * (nranks + 1) / 2)
			die("allreduce mismatch", i);
	if (rank == 0)
		printf("mpi_check: allreduce of %d longs over %d ranks ok\n", N, nranks);
	free(in);
	free(out);
}

int main(int argc, char **argv)
{
	int rank, nranks, iters = argc > 1 ? atoi(argv[1]) : 100;
	int linger_ms = argc > 2 ? atoi(argv[2]) : 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2)
		die("needs at least 2 ranks, has", nranks);
	pingpong(rank, iters);
	allreduce(rank, nranks);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: ok\n");
	/* With a second argument, stay a while with the NIC still open, so an
	 * observer sampling its counters (softrnic stats) sees their final
	 * values: UCX never closes the device, the counters end with the
	 * process. */
	if (linger_ms > 0)
		usleep((useconds_t)linger_ms * 1000);
	MPI_Finalize();
	return 0;
}
