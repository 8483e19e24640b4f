/*
 * store_sim_rules.h - the emulator's rule list (schema/023), as JSON text
 * checked by spec/sim_rules.h before it is stored.
 */
#ifndef TP_STORE_SIM_RULES_H
#define TP_STORE_SIM_RULES_H

#include "store.h"

/* The list as JSON text (new string), on a pooled connection or the caller's. */
enum store_rc store_sim_rules_get(struct store *st, char **json) MUST_CHECK;
enum store_rc store_sim_rules_read(struct store_conn *c, char **json) MUST_CHECK;
/* Replaces the list with json (a checked JSON array). */
enum store_rc store_sim_rules_set(struct store *st, const char *json) MUST_CHECK;

#endif
