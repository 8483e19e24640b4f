/*
 * api_emulator.c - the emulator's controls (api_emulator.h).
 */
#include "api_emulator.h"

bool emulator_only(struct request *req)
{
	if (req->srv->emulator)
		return true;
	reply_error(req, API_FAILED_PRECONDITION,
		    "This trainplane-server is not an emulator: %s changes what every client sees "
		    "and is refused outside emulator mode (start the server with --emulator or "
		    "`emulator: true`).", req->route->operation_id);
	return false;
}

void api_emulator_get(struct request *req)
{
	reply_json(req, 200, json_pack("{s:b}", "enabled", req->srv->emulator));
}
