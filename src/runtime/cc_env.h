/*
 * cc_env.h — congestion control settings from SOFTRNIC_* environment
 * variables (cc_env.c): applied to an rnic_config before rnic_create.
 */
#ifndef SOFTRNIC_RUNTIME_CC_ENV_H
#define SOFTRNIC_RUNTIME_CC_ENV_H

#include "rnic/rnic.h"

void srt_cc_from_env(struct rnic_config *cfg);

#endif
