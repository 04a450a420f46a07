/*
 * faults.c — SOFTRNIC_FAULTS: loss, duplication, reordering, delay and
 * corruption of received packets (contract and placement: faults.h).
 *
 * Per received packet the draws come in a fixed order, one per fault
 * that is on: loss, corrupt (and then the bit), reorder, dup.  They are
 * drawn whatever the state (a reorder slot already taken, say), so the
 * n-th packet's fate depends on the seed and n only, not on timing; what
 * the state then does with a decision may depend on timing (a held
 * packet released by its hold time rather than by a later packet).
 *
 *  - loss: the packet is gone, as on a lossy link; RC recovers by
 *    Go-Back-N (IBTA 9.7.5.1.1 retransmit on timeout or PSN sequence
 *    error NAK).
 *  - corrupt: one bit of the UDP payload is flipped, anywhere but BTH byte
 *    4: that byte (resv8a) is one of the fields the ICRC masks (IBTA
 *    A17.3.3), so a flip there would not be noticed, unlike a flip
 *    anywhere else (CRC-32 catches every single-bit error).  The packet
 *    then fails the ICRC check and is counted in rx_drop_bad_icrc
 *    (IBTA 9.7.5.1.1 / A17.4: a packet with a bad ICRC is silently
 *    dropped).
 *  - reorder: the packet is held in a one-packet slot and delivered right
 *    after the next packet that arrives, or SRT_FAULTS_REORDER_HOLD_NS
 *    later if none does; while the slot is full, a packet chosen for
 *    reordering goes through in order (not counted).
 *  - dup: the packet is delivered twice (the responder's duplicate
 *    detection, IBTA 9.7.5.1.2, answers the second copy).
 *  - delay: every packet waits delay_ns in a FIFO delay line (order is
 *    kept), as a longer cable would make it; a full line lets its oldest
 *    packet go early.
 *
 * A datagram longer than SRT_RX_BUFSZ (only a hostile one: no IB packet
 * is) is never held back: it goes through at once.
 */
#include "runtime/faults.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/prng.h"

struct held_pkt {
	uint64_t due_ns;
	unsigned copies;                /* 2 when dup chose it */
	struct srt_rx_pkt meta;         /* meta.data points at buf when delivered */
	uint8_t buf[SRT_RX_BUFSZ];
};

struct srt_faults {
	struct srt_faults_config cfg;
	uint64_t rng[4];
	srt_faults_deliver_fn deliver;
	void *ctx;
	struct srt_faults_counters counters;
	bool reorder_held;
	struct held_pkt reorder;
	/* The delay line: a ring of SRT_FAULTS_DELAY_SLOTS, NULL without
	 * delay=.  Due times only grow along it (a constant delay). */
	struct held_pkt *line;
	unsigned head, count;
};

/* ---- parsing ---------------------------------------------------------------- */

/* A decimal number: digits, an optional fraction, an optional exponent
 * (1e-4).  Parsed by hand, not strtod, so the program's locale (a
 * decimal comma) cannot change what SOFTRNIC_FAULTS means.  Returns the
 * end, or NULL if s does not start with a number. */
static const char *parse_decimal(const char *s, double *out)
{
	double v = 0, scale = 1;
	bool digits = false;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++, digits = true)
		v = v * 10 + (*p - '0');
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits = true) {
			scale /= 10;
			v += (*p - '0') * scale;
		}
	}
	if (!digits)
		return NULL;
	if (*p == 'e' || *p == 'E') {
		const char *e = p + 1;
		bool neg = false;
		int exp = 0;
		if (*e == '+' || *e == '-')
			neg = *e++ == '-';
		if (!(*e >= '0' && *e <= '9'))
			return NULL;
		for (; *e >= '0' && *e <= '9'; e++)
			if (exp < 400)
				exp = exp * 10 + (*e - '0');
		for (int i = 0; i < exp; i++)
			v = neg ? v / 10 : v * 10;
		p = e;
	}
	*out = v;
	return p;
}

static int parse_probability(const char *key, const char *val, double *out, char *err, size_t errlen)
{
	double v;
	const char *end = parse_decimal(val, &v);

	if (!end || *end || !(v >= 0 && v <= 1)) {
		snprintf(err, errlen, "%s=%s: expected a probability from 0 to 1 (e.g. %s=0.01)", key, val, key);
		return EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_delay(const char *val, uint64_t *out, char *err, size_t errlen)
{
	static const struct { const char *unit; double ns; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 },
	};
	double v;
	const char *end = parse_decimal(val, &v);

	if (end) {
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			if (strcmp(end, units[i].unit))
				continue;
			double ns = v * units[i].ns;
			if (ns > (double)SRT_FAULTS_MAX_DELAY_NS)
				break;
			*out = (uint64_t)(ns + 0.5);
			return 0;
		}
	}
	snprintf(err, errlen, "delay=%s: expected a time with a unit ns, us or ms, at most 1000ms (e.g. delay=50us)",
		 val);
	return EINVAL;
}

static int parse_seed(const char *val, uint64_t *out, char *err, size_t errlen)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(val, &end, 0);
	if (!*val || *val == '-' || *val == '+' || *val == ' ' || *end || errno) {
		snprintf(err, errlen, "seed=%s: expected an unsigned integer (e.g. seed=7)", val);
		return EINVAL;
	}
	*out = v;
	return 0;
}

/* Trim spaces at both ends of [*b, *e). */
static void trim(const char **b, const char **e)
{
	while (*b < *e && (**b == ' ' || **b == '\t'))
		(*b)++;
	while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
		(*e)--;
}

int srt_faults_parse(const char *spec, struct srt_faults_config *cfg, char *err, size_t errlen)
{
	static const char *const keys[] = { "loss", "dup", "reorder", "corrupt", "delay", "seed" };
	unsigned seen = 0;

	memset(cfg, 0, sizeof(*cfg));
	const char *all_b = spec, *all_e = spec + strlen(spec);
	trim(&all_b, &all_e);
	if (all_b == all_e)
		return 0;
	for (const char *p = spec;;) {
		const char *comma = strchr(p, ',');
		const char *b = p, *e = comma ? comma : p + strlen(p);
		char item[128], key[32], val[96];

		trim(&b, &e);
		if (b == e) {
			snprintf(err, errlen, "empty item (two commas, or a comma at an end)");
			return EINVAL;
		}
		if ((size_t)(e - b) >= sizeof(item)) {
			snprintf(err, errlen, "item \"%.20s...\" is too long", b);
			return EINVAL;
		}
		memcpy(item, b, (size_t)(e - b));
		item[e - b] = 0;
		char *eq = strchr(item, '=');
		if (!eq) {
			snprintf(err, errlen, "\"%s\": expected key=value", item);
			return EINVAL;
		}
		const char *kb = item, *ke = eq, *vb = eq + 1, *ve = item + strlen(item);
		trim(&kb, &ke);
		trim(&vb, &ve);
		snprintf(key, sizeof(key), "%.*s", (int)(ke - kb), kb);
		snprintf(val, sizeof(val), "%.*s", (int)(ve - vb), vb);

		unsigned k = 0;
		while (k < sizeof(keys) / sizeof(keys[0]) && strcmp(key, keys[k]))
			k++;
		if (k == sizeof(keys) / sizeof(keys[0])) {
			snprintf(err, errlen, "unknown key \"%s\" (known: loss, dup, reorder, delay, corrupt, seed)", key);
			return EINVAL;
		}
		if (seen & 1u << k) {
			snprintf(err, errlen, "%s given twice", key);
			return EINVAL;
		}
		seen |= 1u << k;
		int e2;
		switch (k) {
		case 0: e2 = parse_probability(key, val, &cfg->loss, err, errlen); break;
		case 1: e2 = parse_probability(key, val, &cfg->dup, err, errlen); break;
		case 2: e2 = parse_probability(key, val, &cfg->reorder, err, errlen); break;
		case 3: e2 = parse_probability(key, val, &cfg->corrupt, err, errlen); break;
		case 4: e2 = parse_delay(val, &cfg->delay_ns, err, errlen); break;
		default:
			e2 = parse_seed(val, &cfg->seed, err, errlen);
			cfg->seeded = true;
			break;
		}
		if (e2)
			return e2;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

bool srt_faults_config_active(const struct srt_faults_config *cfg)
{
	return cfg->loss > 0 || cfg->dup > 0 || cfg->reorder > 0 || cfg->corrupt > 0 || cfg->delay_ns > 0;
}

void srt_faults_format(const struct srt_faults_config *cfg, char *out, size_t cap)
{
	size_t n = 0;

#define ADD(...)                                                                          \
	do {                                                                              \
		int w = snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__);            \
		if (w > 0)                                                                \
			n += (size_t)w;                                                   \
	} while (0)
	if (cap)
		out[0] = 0;
	if (cfg->loss > 0)
		ADD("loss=%g,", cfg->loss);
	if (cfg->dup > 0)
		ADD("dup=%g,", cfg->dup);
	if (cfg->reorder > 0)
		ADD("reorder=%g,", cfg->reorder);
	if (cfg->delay_ns > 0)
		ADD("delay=%lluns,", (unsigned long long)cfg->delay_ns);
	if (cfg->corrupt > 0)
		ADD("corrupt=%g,", cfg->corrupt);
	ADD("seed=%llu", (unsigned long long)cfg->seed);
#undef ADD
}

/* ---- the faults ---------------------------------------------------------------- */

struct srt_faults *srt_faults_create(const struct srt_faults_config *cfg, srt_faults_deliver_fn deliver,
				     void *ctx)
{
	struct srt_faults *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->cfg = *cfg;
	f->deliver = deliver;
	f->ctx = ctx;
	prng_seed(f->rng, cfg->seed);
	if (cfg->delay_ns) {
		/* ~4.3 MB of address space; pages are touched as the line
		 * fills, so a short delay uses only the first few. */
		f->line = malloc((size_t)SRT_FAULTS_DELAY_SLOTS * sizeof(*f->line));
		if (!f->line) {
			free(f);
			errno = ENOMEM;
			return NULL;
		}
	}
	return f;
}

void srt_faults_destroy(struct srt_faults *f)
{
	if (!f)
		return;
	free(f->line);
	free(f);
}

const struct srt_faults_counters *srt_faults_counters(const struct srt_faults *f)
{
	return &f->counters;
}

/* True with probability `prob`; draws nothing when that fault is off. */
static bool chance(struct srt_faults *f, double prob)
{
	if (prob <= 0)
		return false;
	return (double)(prng_next(f->rng) >> 11) * 0x1.0p-53 < prob;
}

static void hold(struct held_pkt *h, const struct srt_rx_pkt *p, unsigned copies, uint64_t due)
{
	h->due_ns = due;
	h->copies = copies;
	h->meta = *p;
	memcpy(h->buf, p->data, p->len);
	h->meta.data = h->buf;
}

static void deliver_held(struct srt_faults *f, struct held_pkt *h, uint64_t now)
{
	h->meta.data = h->buf;
	f->deliver(f->ctx, &h->meta, now);
}

/* Deliver the delay line's oldest packet. */
static void line_pop(struct srt_faults *f, uint64_t now)
{
	struct held_pkt *h = &f->line[f->head];

	f->head = (f->head + 1) % SRT_FAULTS_DELAY_SLOTS;
	f->count--;
	deliver_held(f, h, now);
}

/* Past loss, corruption and reordering: `copies` copies of p go to the
 * delay line, or straight to the transport. */
static void emit(struct srt_faults *f, const struct srt_rx_pkt *p, unsigned copies, uint64_t now)
{
	for (unsigned c = 0; c < copies; c++) {
		if (!f->line || p->len > SRT_RX_BUFSZ) {
			f->deliver(f->ctx, p, now);
			continue;
		}
		if (f->count == SRT_FAULTS_DELAY_SLOTS)
			line_pop(f, now);
		struct held_pkt *h = &f->line[(f->head + f->count) % SRT_FAULTS_DELAY_SLOTS];
		hold(h, p, 1, now + f->cfg.delay_ns);
		f->count++;
		f->counters.delay++;
	}
}

/* Flip one bit of the UDP payload, not in BTH byte 4 (masked by the ICRC,
 * IBTA A17.3.3: see the top of this file). */
static void corrupt_bit(struct srt_faults *f, struct srt_rx_pkt *p)
{
	uint64_t r = prng_next(f->rng);

	if (p->len < 6)
		return;
	uint64_t bit = r % ((uint64_t)(p->len - 1) * 8);
	size_t byte = (size_t)(bit / 8);
	if (byte >= 4)
		byte++;
	p->data[byte] ^= (uint8_t)(1u << (bit % 8));
	f->counters.corrupt++;
}

void srt_faults_receive(struct srt_faults *f, struct srt_rx_pkt *p, uint64_t now)
{
	srt_faults_release(f, now);

	/* Every draw, in this order, whatever the state (top of this file). */
	bool lose = chance(f, f->cfg.loss);
	bool corrupt = chance(f, f->cfg.corrupt);
	if (corrupt && !lose)
		corrupt_bit(f, p);
	else if (corrupt)
		(void)prng_next(f->rng);        /* the bit it would have been */
	bool reorder = chance(f, f->cfg.reorder);
	unsigned copies = chance(f, f->cfg.dup) ? 2 : 1;

	if (lose) {
		f->counters.loss++;
		return;
	}
	if (copies == 2)
		f->counters.dup++;
	if (reorder && !f->reorder_held && p->len <= SRT_RX_BUFSZ) {
		hold(&f->reorder, p, copies, now + SRT_FAULTS_REORDER_HOLD_NS);
		f->reorder_held = true;
		f->counters.reorder++;
		return;
	}
	emit(f, p, copies, now);
	if (f->reorder_held) {          /* overtaken: now the held one */
		f->reorder_held = false;
		emit(f, &f->reorder.meta, f->reorder.copies, now);
	}
}

uint64_t srt_faults_deadline(const struct srt_faults *f)
{
	uint64_t d = UINT64_MAX;

	if (f->count)
		d = f->line[f->head].due_ns;
	if (f->reorder_held && f->reorder.due_ns < d)
		d = f->reorder.due_ns;
	return d;
}

void srt_faults_release(struct srt_faults *f, uint64_t now)
{
	if (f->reorder_held && f->reorder.due_ns <= now) {
		f->reorder_held = false;
		emit(f, &f->reorder.meta, f->reorder.copies, now);
	}
	while (f->count && f->line[f->head].due_ns <= now)
		line_pop(f, now);
}
