/*
 * sim_fleet.h - the emulator's simulated fleet (docs/emulator.md).
 *
 * In emulator mode the scheduler leader keeps a fleet of simulated nodes
 * generated from the catalog, so that every job the validator accepts can
 * be placed: in every region, for every accelerator the catalog offers
 * there, nodes_per_type nodes of the largest size that accelerator comes
 * in (its highest count, and the most vCPUs and memory of the machine
 * types that carry it), spread over the zones that offer it; TPU hosts
 * likewise; and nodes_per_type CPU nodes of the region's largest machine.
 *
 * The fleet plays an agent for each of its nodes, through the same store
 * calls the agent protocol's routes make (store_node_register_on,
 * store_node_sync_on): the desired set, the reports, the replicas' logs
 * and the job state machine are the real ones. A replica runs the
 * `simulate` runtime: its log shows its environment (TF_CONFIG,
 * CLUSTER_SPEC, ...), then after its script's seconds (the default
 * replica_s) it exits with the script's code, is lost like a preempted
 * SPOT VM ("preempt"), or runs until stopped ("hang"); a script's metric
 * is reported with its end, as a trainer's metric file would be.
 *
 * Time is the emulator's (lib/emu_clock.h): a replica runs its script's
 * seconds of emulated time, so an advanced clock ends it at once; reports
 * carry real instants, which the server puts back on the clock.
 * One thread (the scheduler's) uses a fleet.
 */
#ifndef TP_SIM_FLEET_H
#define TP_SIM_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "emu_clock.h"
#include "common.h"
#include "store.h"
#include "store_node.h"

struct sim_fleet;

/* A fleet generated from cat (read now, not kept); its agents' incarnation
 * is "emulator-" + incarnation (a fresh random id). */
struct sim_fleet *sim_fleet_new(const struct catalog *cat, int nodes_per_type, double replica_s,
				const char *incarnation);
void sim_fleet_free(struct sim_fleet *f);	/* NULL is a no-op */

size_t sim_fleet_size(const struct sim_fleet *f);
/* Its i-th node as it registers it (i < sim_fleet_size()). */
const struct node_info *sim_fleet_node(const struct sim_fleet *f, size_t i);

/*
 * One turn on the caller's connection at real_us (wall clock, read on
 * clock): registers the fleet (the first turn, and after a leadership
 * change: a new incarnation, whose predecessor's replicas are LOST and
 * restart as on a rebooted node), syncs every node whose desired set moved
 * or whose replicas have news, and plays what the desired sets ask.
 * *ended: replicas ended (capacity freed). *next_real_us: the real instant
 * of the fleet's next deadline at the clock's speed (INT64_MAX: none).
 */
enum store_rc sim_fleet_turn(struct sim_fleet *f, struct store_conn *c,
			     const struct emu_clock *clock, int64_t real_us, int *ended,
			     int64_t *next_real_us) MUST_CHECK;

/*
 * Forgets the registration and every replica: the next turn registers the
 * fleet anew under incarnation (a fresh id), as rebooted nodes whose
 * replicas were lost (after a lost leadership, or STORE_NOT_FOUND /
 * STORE_STALE from a turn: a node deleted or taken over).
 */
void sim_fleet_reset(struct sim_fleet *f, const char *incarnation);

/* Whether node is one of the fleet's (by name). */
bool sim_fleet_has_node(const char *node);

#endif
