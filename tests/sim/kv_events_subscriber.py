"""An independent subscriber to `lm-warden sim --kv-events-config`: pyzmq and msgpack, as a consumer of
vLLM's events would read them. Run by ctest (sim_kv_events_python) with Debian's /usr/bin/python3, which
has python3-zmq and python3-msgpack:  kv_events_subscriber.py LM_WARDEN_BINARY

For each encoding (tagged maps, then the older arrays): starts the sim with one rank, subscribes, sends a
chat request with a session id, and checks the multipart frames, the msgpack fields and the replay."""

import json
import socket
import subprocess
import sys
import time
import urllib.request

import msgpack
import zmq

STORED_FIELDS = ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
                 "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind",
                 "kv_cache_spec_sliding_window", "session_id"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sim(binary, encoding, pub, replay):
    config = {"enable_kv_cache_events": True, "endpoint": f"tcp://*:{pub}",
              "replay_endpoint": f"tcp://*:{replay}", "topic": "kv"}
    proc = subprocess.Popen([binary, "sim", "--port", "0", "--served-model-name", "m", "--log-level", "warn",
                             "--time-scale", "50", "--kv-events-config", json.dumps(config),
                             "--kv-events-encoding", encoding], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("listening on http://"), line
    return proc, int(line.rsplit(":", 1)[1])


def as_map(event, encoding):
    """The event as a dict of its fields, from either encoding."""
    if encoding == "tagged_map":
        assert isinstance(event, dict) and next(iter(event)) == "type", event
        return event
    assert isinstance(event, list), event
    fields = {"BlockStored": STORED_FIELDS, "BlockRemoved": ["block_hashes", "medium", "group_idx"]}
    names = fields.get(event[0], [])
    assert len(event) == 1 + len(names), event  # array_like writes every field
    return dict(zip(["type"] + names, event))


def check_batch(payload, encoding):
    batch = msgpack.unpackb(payload)
    if encoding == "tagged_map":
        assert list(batch) == ["ts", "events", "data_parallel_rank"], batch.keys()
        ts, events, rank = batch["ts"], batch["events"], batch["data_parallel_rank"]
    else:
        ts, events, rank = batch
    assert isinstance(ts, float) and rank == 0, (ts, rank)
    return [as_map(e, encoding) for e in events]


def send_chat(port, session_id):
    body = json.dumps({"model": "m", "max_tokens": 2, "session_id": session_id,
                       "messages": [{"role": "user", "content": "hello " * 200}]}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body,
                                     {"Content-Type": "application/json"})
    assert urllib.request.urlopen(request, timeout=30).status == 200


def receive_store(sub, encoding):
    while True:
        topic, seq, payload = sub.recv_multipart()
        assert topic == b"kv" and len(seq) == 8
        for event in check_batch(payload, encoding):
            if event["type"] == "BlockStored":
                return int.from_bytes(seq, "big", signed=True), event


def check_replay(ctx, replay, encoding):
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.RCVTIMEO, 5000)
    dealer.connect(f"tcp://127.0.0.1:{replay}")
    dealer.send_multipart([b"", (0).to_bytes(8, "big")])
    seqs = []
    while True:
        empty, seq, payload = dealer.recv_multipart()
        seq = int.from_bytes(seq, "big", signed=True)
        assert empty == b""
        if seq == -1:
            assert payload == b""
            break
        check_batch(payload, encoding)
        seqs.append(seq)
    assert seqs == list(range(len(seqs))) and seqs, seqs
    dealer.close(linger=0)


def run(binary, encoding):
    pub, replay = free_port(), free_port()
    proc, port = start_sim(binary, encoding, pub, replay)
    ctx = zmq.Context()
    try:
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.RCVTIMEO, 5000)
        sub.setsockopt(zmq.SUBSCRIBE, b"kv")
        sub.connect(f"tcp://127.0.0.1:{pub}")
        time.sleep(0.5)  # a SUB misses what is published before it has joined
        send_chat(port, "py-session")
        seq, stored = receive_store(sub, encoding)
        assert seq == 0, seq
        assert stored["session_id"] == "py-session", stored
        assert stored["medium"] == "GPU" and stored["kv_cache_spec_kind"] == "full_attention", stored
        assert all(isinstance(h, int) and 0 <= h < 2**64 for h in stored["block_hashes"]), stored
        assert len(stored["token_ids"]) == len(stored["block_hashes"]) * stored["block_size"], stored
        check_replay(ctx, replay, encoding)
        sub.close(linger=0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        ctx.term()
    print(f"{encoding}: ok")


def main():
    for encoding in ("tagged_map", "array"):
        run(sys.argv[1], encoding)


if __name__ == "__main__":
    main()
