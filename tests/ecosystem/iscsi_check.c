/* iscsi_check.c — a small libiscsi client for tests/ecosystem/iser.sh:
 * writes a file's bytes to a LUN, or reads a LUN's first bytes into a file,
 * through an iscsi:// or iser:// URL, so the script can write a random
 * pattern over iSER and compare what comes back over iSER and over
 * iSCSI/TCP (Debian's libiscsi-bin ships no iscsi-dd).  It goes through the
 * same libiscsi entry points as libiscsi's own utilities: the URL parser
 * picks the transport (iser:// → iSER over librdmacm.so.1 and
 * libibverbs.so.1), then synchronous READ16/WRITE16.
 *
 * Two limits of Debian's libiscsi 1.19 iSER code shape it: a command moves
 * at most 256 KiB (its fixed registered buffers), so this one moves
 * 128 KiB at a time; and it never sends a read of 256 bytes or less (READ
 * CAPACITY, say), whose buffer libiscsi 1.19 frees into its pool of
 * 256-byte blocks and later clears whole (fixed upstream as "Fix pdu
 * indata of iser alloc and free mismatch").  The block size is given.
 *
 *   iscsi_check write URL INITIATOR BLOCK_SIZE FILE
 *   iscsi_check read  URL INITIATOR BLOCK_SIZE FILE LENGTH
 * Exit status 0, or 1 with a message naming the failed command.
 */
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK = 128 * 1024 };

static struct iscsi_context *connect_lun(const char *url_text, const char *initiator, int *lun)
{
	struct iscsi_context *iscsi = iscsi_create_context(initiator);
	if (iscsi == NULL) {
		fprintf(stderr, "iscsi_check: iscsi_create_context failed\n");
		return NULL;
	}
	struct iscsi_url *url = iscsi_parse_full_url(iscsi, url_text);
	if (url == NULL) {
		fprintf(stderr, "iscsi_check: bad URL %s: %s\n", url_text, iscsi_get_error(iscsi));
		iscsi_destroy_context(iscsi);
		return NULL;
	}
	iscsi_set_targetname(iscsi, url->target);
	iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(iscsi, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	*lun = url->lun;
	if (iscsi_full_connect_sync(iscsi, url->portal, url->lun) != 0) {
		fprintf(stderr, "iscsi_check: login to %s failed: %s\n", url_text, iscsi_get_error(iscsi));
		iscsi_destroy_url(url);
		iscsi_destroy_context(iscsi);
		return NULL;
	}
	iscsi_destroy_url(url);
	return iscsi;
}

/* A task that ended in GOOD status, or a message and false. */
static int task_good(struct iscsi_context *iscsi, struct scsi_task *task, const char *what, uint64_t lba)
{
	if (task != NULL && task->status == SCSI_STATUS_GOOD)
		return 1;
	fprintf(stderr, "iscsi_check: %s at LBA %llu failed: %s\n", what, (unsigned long long)lba,
		task == NULL ? iscsi_get_error(iscsi) : "status not GOOD");
	return 0;
}

static int write_file(struct iscsi_context *iscsi, int lun, int block_size, FILE *in)
{
	static unsigned char buf[CHUNK];
	uint64_t lba = 0;
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
		if (n % (size_t)block_size != 0) {
			fprintf(stderr, "iscsi_check: the file is not a whole number of %d-byte blocks\n", block_size);
			return 0;
		}
		struct scsi_task *task = iscsi_write16_sync(iscsi, lun, lba, buf, (uint32_t)n, block_size, 0, 0, 0, 0, 0);
		int ok = task_good(iscsi, task, "WRITE16", lba);
		if (task != NULL)
			scsi_free_scsi_task(task);
		if (!ok)
			return 0;
		lba += n / (size_t)block_size;
	}
	return 1;
}

static int read_file(struct iscsi_context *iscsi, int lun, int block_size, FILE *out, uint64_t length)
{
	uint64_t lba = 0, done = 0;
	while (done < length) {
		uint32_t n = length - done < CHUNK ? (uint32_t)(length - done) : CHUNK;
		struct scsi_task *task = iscsi_read16_sync(iscsi, lun, lba, n, block_size, 0, 0, 0, 0, 0);
		int ok = task_good(iscsi, task, "READ16", lba);
		if (ok && task->datain.size != (int)n) {
			fprintf(stderr, "iscsi_check: READ16 at LBA %llu returned %d bytes, not %u\n",
				(unsigned long long)lba, task->datain.size, n);
			ok = 0;
		}
		if (ok && fwrite(task->datain.data, 1, n, out) != n) {
			fprintf(stderr, "iscsi_check: writing the output file failed\n");
			ok = 0;
		}
		if (task != NULL)
			scsi_free_scsi_task(task);
		if (!ok)
			return 0;
		done += n;
		lba += n / (uint32_t)block_size;
	}
	return 1;
}

int main(int argc, char **argv)
{
	int writing = argc == 6 && strcmp(argv[1], "write") == 0;
	int reading = argc == 7 && strcmp(argv[1], "read") == 0;
	if (!writing && !reading) {
		fprintf(stderr, "usage: iscsi_check write URL INITIATOR BLOCK_SIZE FILE\n"
				"       iscsi_check read  URL INITIATOR BLOCK_SIZE FILE LENGTH\n");
		return 2;
	}
	int block_size = atoi(argv[4]);
	uint64_t length = reading ? strtoull(argv[6], NULL, 0) : 0;
	if (block_size <= 0 || CHUNK % block_size != 0 || (reading && length % (uint64_t)block_size != 0)) {
		fprintf(stderr, "iscsi_check: bad block size or length\n");
		return 2;
	}
	FILE *file = fopen(argv[5], writing ? "rb" : "wb");
	if (file == NULL) {
		perror(argv[5]);
		return 1;
	}
	int lun;
	struct iscsi_context *iscsi = connect_lun(argv[2], argv[3], &lun);
	if (iscsi == NULL) {
		fclose(file);
		return 1;
	}
	int ok = writing ? write_file(iscsi, lun, block_size, file) : read_file(iscsi, lun, block_size, file, length);
	if (fclose(file) != 0)
		ok = 0;
	if (iscsi_logout_sync(iscsi) != 0) {
		fprintf(stderr, "iscsi_check: logout failed: %s\n", iscsi_get_error(iscsi));
		ok = 0;
	}
	iscsi_destroy_context(iscsi);
	if (ok)
		printf("iscsi_check: %s %s ok\n", argv[1], argv[2]);
	return ok ? 0 : 1;
}
