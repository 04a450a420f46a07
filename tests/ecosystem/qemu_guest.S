/*
 * qemu_guest.S — the guest of tests/ecosystem/qemu_migrate.sh: a multiboot
 * kernel (QEMU's -kernel loads it in 32-bit protected mode, paging off)
 * whose memory is known and keeps changing.  It fills 4..60 MiB with the
 * dword address * 0x9E3779B1, writes 0x600DF00D at 0x200000 when done,
 * then forever counts rounds at 0x200004 and adds one to every dword of
 * 3..4 MiB each round, so migration always has dirty pages to send again.
 * Built by the test: as --32, ld -m elf_i386 -Ttext 0x100000.
 */
	.code32
	.text
	.globl _start
	.align 4
multiboot_header:                       /* magic, flags 0, checksum */
	.long 0x1BADB002
	.long 0
	.long -0x1BADB002
_start:
	cli
	mov $0x400000, %edi
1:	mov %edi, %eax
	imul $0x9E3779B1, %eax, %eax
	mov %eax, (%edi)
	add $4, %edi
	cmp $0x3C00000, %edi
	jb 1b
	movl $0x600DF00D, 0x200000
2:	incl 0x200004
	mov $0x300000, %edi
3:	incl (%edi)
	add $4, %edi
	cmp $0x400000, %edi
	jb 3b
	jmp 2b
