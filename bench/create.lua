-- wrk: POST jobs.create with a fresh job id on every request. Each wrk
-- thread has its own Lua state: setup() numbers the threads so ids never
-- collide, and the run tag keeps runs against one database apart.
local threads = 0
local run = tostring(os.time())
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
  thread:set("run", run)
end
local counter = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
function request()
  counter = counter + 1
  local body = '{"jobId":"b' .. run .. '_' .. tid .. '_' .. counter .. '","trainingInput":{"scaleTier":"CUSTOM",' ..
    '"masterType":"n1-standard-8","workerType":"n1-standard-8","workerCount":"2",' ..
    '"masterConfig":{"imageUri":"localhost/trainer:latest","acceleratorConfig":{"count":"4","type":"NVIDIA_TESLA_T4"}},' ..
    '"workerConfig":{"acceleratorConfig":{"count":"4","type":"NVIDIA_TESLA_T4"}},' ..
    '"region":"us-central1","args":["--epochs","10"]},"labels":{"owner":"bench"}}'
  return wrk.format(nil, wrk.path, nil, body)
end
function done(summary, latency, requests)
  io.write(string.format("non2xx=%d\n", summary.errors.status))
end
