-- wrk: POST jobs.create with a fresh job id on every request.
local counter = 0
local tag = tostring(math.random(1, 1e9))
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
function setup(thread)
  thread:set("tag", tostring(math.random(1, 1e9)))
end
function request()
  counter = counter + 1
  local body = '{"jobId":"b' .. tag .. '_' .. counter .. '","trainingInput":{"scaleTier":"CUSTOM",' ..
    '"masterType":"n1-standard-8","workerType":"n1-standard-8","workerCount":"2",' ..
    '"masterConfig":{"imageUri":"localhost/trainer:latest","acceleratorConfig":{"count":"4","type":"NVIDIA_TESLA_T4"}},' ..
    '"workerConfig":{"acceleratorConfig":{"count":"4","type":"NVIDIA_TESLA_T4"}},' ..
    '"region":"us-central1","args":["--epochs","10"]},"labels":{"owner":"bench"}}'
  return wrk.format(nil, wrk.path, nil, body)
end
function done(summary, latency, requests)
  io.write(string.format("non2xx=%d\n", summary.errors.status))
end
