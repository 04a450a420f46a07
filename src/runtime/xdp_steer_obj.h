/*
 * xdp_steer_obj.h — the compiled XDP program (xdp_steer.bpf.c), as bytes
 * embedded in the runtime by the build (scripts/cmake/embed_file.cmake).
 */
#ifndef SOFTRNIC_RUNTIME_XDP_STEER_OBJ_H
#define SOFTRNIC_RUNTIME_XDP_STEER_OBJ_H

#include <stddef.h>

extern const unsigned char srt_xdp_steer_obj[];
extern const size_t srt_xdp_steer_obj_len;

#endif
