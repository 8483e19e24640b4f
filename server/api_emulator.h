/*
 * api_emulator.h - the emulator's controls under /trainplane/v1/emulator
 * (docs/emulator.md): its state, and the guard every control that changes
 * what clients see (reset, the clock, scripted outcomes) passes first.
 */
#ifndef TP_API_EMULATOR_H
#define TP_API_EMULATOR_H

#include <stdbool.h>

#include "http.h"

/*
 * True in emulator mode. Otherwise replies 400 FAILED_PRECONDITION (this
 * server is no emulator; the control would change a real cluster's jobs or
 * time) and returns false.
 */
bool emulator_only(struct request *req);

/* GET /trainplane/v1/emulator: {"enabled": bool}. Open in every mode. */
void api_emulator_get(struct request *req);

/*
 * The clock: GET /trainplane/v1/emulator/clock, POST ...:advanceClock
 * ({"duration": "7200s"}), POST ...:setClockSpeed ({"speed": 60}); each
 * answers {"time", "speed", "offset"}.
 */
void api_emulator_get_clock(struct request *req);
void api_emulator_advance_clock(struct request *req);
void api_emulator_set_clock_speed(struct request *req);

/*
 * POST /trainplane/v1/emulator:reset: {} clears every project, {"project":
 * "ID"} one; answers {"deletedJobs": N}.
 */
void api_emulator_reset(struct request *req);

/*
 * Scripted outcomes: GET /trainplane/v1/emulator/rules, POST
 * ...:setRules ({"rules": [...]}, spec/sim_rules.h); each answers
 * {"rules": [...]}.
 */
void api_emulator_get_rules(struct request *req);
void api_emulator_set_rules(struct request *req);

#endif
