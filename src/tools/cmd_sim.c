/*
 * cmd_sim.c — `softrnic sim ...`: the fabric simulator (src/sim), linked
 * into the tool: it needs nothing but the rnic it runs on simulated time.
 * Its command line is sim_cli.c.
 */
#include "tools/commands.h"
#include "tools/sim_cli.h"

int cmd_sim(int argc, char **argv)
{
	return sim_cli(argc, argv);
}
