/*
 * wire_test.h — tiny helpers shared by the C tests of wire/: CHECK_ERR
 * (a CHECK of tests/check.h naming wire errors), a loader that reads every
 * frame of a pcap into memory, and a replayable PRNG.
 */
#ifndef SOFTRNIC_TESTS_WIRE_TEST_H
#define SOFTRNIC_TESTS_WIRE_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "wire/pcap.h"
#include "wire/wire.h"

/* CHECK that an int equals an expected wire_err, naming both on failure. */
#define CHECK_ERR(got, want)                                                 \
	do {                                                                 \
		int got_ = (got), want_ = (want);                            \
		CHECK(got_ == want_, "%s = %s (%d), want %s", #got, wire_err_name(got_), got_, \
		      wire_err_name(want_));                                 \
	} while (0)

struct frame {
	uint8_t *data;
	uint32_t len;
};

struct capture {
	struct frame *frames;
	size_t count;
};

/* Reads all frames of `path`; exits the test on any I/O problem, since
 * nothing can be checked without the vectors. */
static inline struct capture load_capture(const char *path)
{
	struct capture c = { 0 };
	struct pcap_reader r;
	static uint8_t buf[PCAP_MAX_SNAPLEN];
	struct pcap_record rec;
	int rc;
	if (pcap_open_read(&r, path) < 0) {
		perror(path);
		exit(2);
	}
	while ((rc = pcap_read(&r, &rec, buf, sizeof(buf))) == 1) {
		c.frames = realloc(c.frames, (c.count + 1) * sizeof(*c.frames));
		c.frames[c.count].data = malloc(rec.caplen);
		memcpy(c.frames[c.count].data, rec.data, rec.caplen);
		c.frames[c.count].len = rec.caplen;
		c.count++;
	}
	pcap_close_read(&r);
	if (rc < 0) {
		fprintf(stderr, "%s: damaged pcap\n", path);
		exit(2);
	}
	return c;
}

static inline void free_capture(struct capture *c)
{
	for (size_t i = 0; i < c->count; i++)
		free(c->frames[i].data);
	free(c->frames);
	c->frames = NULL;
	c->count = 0;
}

/* Deterministic PRNG (xorshift64*) so that random tests replay exactly. */
static inline uint64_t test_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

#endif
