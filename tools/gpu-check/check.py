# GPU check on a lent machine: the real server (embedded PostgreSQL), a real
# agent (process runtime) that discovers the GPU through NVML, a Vertex
# custom job asking for the machine's one GPU (CHECK_MACHINE and CHECK_ACCEL,
# set by check.sh from nvidia-smi), and the replica's view of
# CUDA_VISIBLE_DEVICES and of the GPU through PyTorch.
import json, os, subprocess, sys, time, urllib.request

B = 'http://127.0.0.1:18600'
def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(B + path, data=data, method=method,
                                 headers={'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b'{}')
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b'{}')

def wait(pred, secs, what):
    t0 = time.time()
    while time.time() - t0 < secs:
        try:
            v = pred()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.3)
    print('TIMEOUT waiting for', what); return None

wait(lambda: call('GET', '/readyz')[0] == 200, 60, 'server')
node = wait(lambda: [n for n in call('GET', '/trainplane/v1/nodes')[1].get('nodes', []) if n.get('state') == 'READY'], 60, 'node READY')
print('NODES', json.dumps(node, indent=1))
code = ("import os, torch; print('CUDA_VISIBLE_DEVICES=' + os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)'));"
        "print('torch sees', torch.cuda.device_count(), 'GPU(s):', torch.cuda.get_device_name(0));"
        "x = torch.ones(4096, 4096, device='cuda'); print('matmul sum', float((x @ x).sum()))")
st, job = call('POST', '/v1/projects/demo/locations/us-central1/customJobs', {
    'displayName': 'gpu-check',
    'jobSpec': {'workerPoolSpecs': [{
        'machineSpec': {'machineType': os.environ['CHECK_MACHINE'], 'acceleratorType': os.environ['CHECK_ACCEL'], 'acceleratorCount': 1},
        'replicaCount': '1',
        'containerSpec': {'imageUri': 'localhost/unused:1', 'command': ['python3', '-c', code]}}]}})
print('CREATE', st, json.dumps(job)[:600])
name = job.get('name', '')
final = wait(lambda: (lambda j: j if j.get('state') in ('JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED') else None)(call('GET', '/v1/' + name)[1]), 180, 'job end')
print('FINAL', json.dumps(final, indent=1)[:3000])
st, logs = call('POST', '/v2/entries:list', {'resourceNames': ['projects/demo'], 'filter': 'resource.labels.job_id="%s"' % name.split('/')[-1]})
for e in logs.get('entries', []):
    print('LOG', e.get('labels', {}).get('task_name', ''), e.get('textPayload', ''))
