#!/bin/sh
# cm_fail.sh — the connection manager's failures, as a program sees them:
#   1. a connect to a port nobody listens on (our own device answers the
#      REQ): RDMA_CM_EVENT_REJECTED with status 8 (invalid service ID),
#      after librdmacm's 100 ms of resending refused REQs (cma_early.c,
#      "early REQs") — not after the REQ timeouts, which would take 200 ms here;
#   2. a connect to a loopback address no softrnic device serves: the REQ
#      is retried and the program gets RDMA_CM_EVENT_UNREACHABLE after the
#      retries (SOFTRNIC_CM_RESPONSE_TIMEOUT 14 = 67 ms, 2 retries here);
#   3. udaddy -p 7473 (its -p is the port space): rdma_create_id refuses
#      the unknown port space with EINVAL, as the kernel does, and udaddy
#      fails (test_rdmacm_errno.c checks each call's errno).
# usage: cm_fail.sh <libdir> <port>
set -u
libdir=$1 port=$2
command -v rping >/dev/null 2>&1 || { echo "rping not installed"; exit 77; }
status=0
now() { date +%s%N; }
run() {
	env LD_LIBRARY_PATH="$libdir" ${SOFTRNIC_PRELOAD:+LD_PRELOAD=$SOFTRNIC_PRELOAD} \
	    SOFTRNIC_CM_RESPONSE_TIMEOUT=14 SOFTRNIC_CM_RETRIES=2 timeout 20 "$@"
}
# 1. Nobody listens: our own address (each process binds a 127.0.0.N;
#    SOFTRNIC_ADDR pins one so the REQ goes to a device that is up).
t0=$(now)
out=$(SOFTRNIC_ADDR=127.0.0.201 run rping -c -a 127.0.0.201 -p "$port" -C 1 2>&1)
t1=$(now)
ms=$(( (t1 - t0) / 1000000 ))
echo "$out"
if echo "$out" | grep -q "RDMA_CM_EVENT_REJECTED, error 8"; then
	echo "ok   no listener: REJECTED status 8 in $ms ms"
	[ $ms -ge 90 ] && [ $ms -lt 1000 ] || { echo "FAIL: took $ms ms, expected about 100"; status=1; }
else
	echo "FAIL: no listener: expected RDMA_CM_EVENT_REJECTED, error 8"; status=1
fi
# 2. Nobody there at all.
t0=$(now)
out=$(run rping -c -a 127.0.0.202 -p "$port" -C 1 2>&1)
t1=$(now)
ms=$(( (t1 - t0) / 1000000 ))
echo "$out"
if echo "$out" | grep -q "RDMA_CM_EVENT_UNREACHABLE"; then
	echo "ok   nobody there: UNREACHABLE in $ms ms"
	# 3 tries of 67 ms: about 200 ms; allow for a slow machine.
	[ $ms -ge 150 ] && [ $ms -lt 5000 ] || { echo "FAIL: took $ms ms, expected about 200"; status=1; }
else
	echo "FAIL: nobody there: expected RDMA_CM_EVENT_UNREACHABLE"; status=1
fi
# 3. An unknown port space.
if command -v udaddy >/dev/null 2>&1; then
	out=$(run udaddy -p 7473 2>&1); rc=$?
	echo "$out"
	if [ $rc -ne 0 ] && echo "$out" | grep -q "Invalid argument"; then
		echo "ok   udaddy -p 7473: EINVAL, exit $rc"
	else
		echo "FAIL: udaddy -p 7473: expected EINVAL and a failure, exit $rc"; status=1
	fi
fi
exit $status
