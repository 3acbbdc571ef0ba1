#!/usr/bin/python3
"""A KV cache event publisher written from vLLM's wire format (vllm/distributed/kv_events.py), not from the
warden's encoder: a ZMQ PUB socket sending [topic, seq (8 bytes, big-endian), msgpack EventBatch] and a
ROUTER socket answering replays ([identity, "", start] -> [identity, "", seq, payload]..., then seq -1).

Events are encoded the two ways vLLM has: msgspec's array_like tagged structs ([ "BlockStored", field, ...]
in declaration order, the batch [ts, events, data_parallel_rank]) and the tagged maps ({"type": ...}).

Driven by a command file the test appends to, one command a line; after each the script writes how many
it has done to DIR/done. Commands:
  batch ENC SESSION N   N blocks stored by SESSION (ENC: map or array), continuing its chain
  remove ENC SESSION N  the last N blocks SESSION stored, removed
  cleared ENC           AllBlocksCleared
  unknown ENC SESSION N a store with fields and an event type vLLM may add later (to be ignored)
  hide K                K batches published to the replay buffer only (a gap the replay covers)
  lose K                K sequence numbers never published nor buffered (a gap no replay covers)
  malformed             a payload that is not msgpack
  truncated             a valid payload cut short
  restart               the engine restarted: seq back to 0, the buffer empty
  exit
Run with Debian's /usr/bin/python3 (python3-zmq, python3-msgpack).
"""
import os
import random
import sys
import time

import msgpack
import zmq

BLOCK_SIZE = 16


class Publisher:
    def __init__(self, endpoint, replay_endpoint, topic):
        self.ctx = zmq.Context()
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.bind(endpoint)
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.bind(replay_endpoint)
        self.topic = topic.encode()
        self.seq = 0
        self.buffer = []  # (seq, payload)
        self.chains = {}  # session -> list of hashes
        self.rng = random.Random(7)

    # vLLM's BlockStored fields in declaration order (array_like), with session_id last.
    def stored(self, enc, session, n, extra=False):
        chain = self.chains.setdefault(session, [])
        parent = chain[-1] if chain else None
        hashes = [self.rng.getrandbits(63) for _ in range(n)]
        chain.extend(hashes)
        tokens = [self.rng.randrange(1000) for _ in range(n * BLOCK_SIZE)]
        if enc == "array":
            event = ["BlockStored", hashes, parent, tokens, BLOCK_SIZE, None, "GPU", None, None, 0,
                     "full_attention", None, session]
            if extra:
                event.append({"a field": "added later"})
            return event
        event = {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
                 "token_ids": tokens, "block_size": BLOCK_SIZE, "lora_id": None, "medium": "GPU",
                 "lora_name": None, "extra_keys": None, "group_idx": 0,
                 "kv_cache_spec_kind": "full_attention", "kv_cache_spec_sliding_window": None,
                 "session_id": session}
        if extra:
            event["a_field_added_later"] = [1, 2, {"x": "y"}]
        return event

    def removed(self, enc, session, n):
        chain = self.chains.get(session, [])
        gone, self.chains[session] = chain[len(chain) - n:], chain[:len(chain) - n]
        if enc == "array":
            return ["BlockRemoved", gone, "GPU", 0]
        return {"type": "BlockRemoved", "block_hashes": gone, "medium": "GPU", "group_idx": 0}

    @staticmethod
    def cleared(enc):
        return ["AllBlocksCleared"] if enc == "array" else {"type": "AllBlocksCleared"}

    @staticmethod
    def batch(enc, events):
        if enc == "array":
            return msgpack.packb([time.time(), events, 0])
        return msgpack.packb({"ts": time.time(), "events": events, "data_parallel_rank": 0})

    def publish(self, payload, send=True, keep=True):
        seq = self.seq
        self.seq += 1
        if keep:
            self.buffer.append((seq, payload))
        if send:
            self.pub.send_multipart([self.topic, seq.to_bytes(8, "big", signed=True), payload])

    def serve_replays(self):
        while self.router.poll(0):
            frames = self.router.recv_multipart()
            if len(frames) != 3:
                continue
            client, _, start = frames
            start = int.from_bytes(start, "big", signed=True)
            for seq, payload in self.buffer:
                if seq >= start:
                    self.router.send_multipart([client, b"", seq.to_bytes(8, "big", signed=True), payload])
            self.router.send_multipart([client, b"", (-1).to_bytes(8, "big", signed=True), b""])

    def run(self, words):
        cmd = words[0]
        if cmd == "batch":
            self.publish(self.batch(words[1], [self.stored(words[1], words[2], int(words[3]))]))
        elif cmd == "remove":
            self.publish(self.batch(words[1], [self.removed(words[1], words[2], int(words[3]))]))
        elif cmd == "cleared":
            self.chains.clear()
            self.publish(self.batch(words[1], [self.cleared(words[1])]))
        elif cmd == "unknown":
            enc = words[1]
            future = ["BlockPinned", [1, 2]] if enc == "array" else {"type": "BlockPinned", "block_hashes": [1]}
            self.publish(self.batch(enc, [future, self.stored(enc, words[2], int(words[3]), extra=True)]))
        elif cmd == "hide":
            for _ in range(int(words[1])):
                self.publish(self.batch("map", [self.stored("map", "hidden", 1)]), send=False)
        elif cmd == "lose":
            self.seq += int(words[1])
        elif cmd == "malformed":
            self.publish(b"\xc1 not msgpack")
        elif cmd == "truncated":
            self.publish(self.batch("map", [self.stored("map", "cut", 4)])[:20])
        elif cmd == "restart":
            self.seq = 0
            self.buffer = []
            self.chains.clear()
        elif cmd == "exit":
            return False
        return True


def main():
    endpoint, replay_endpoint, control = sys.argv[1], sys.argv[2], sys.argv[3]
    pub = Publisher(endpoint, replay_endpoint, "")
    commands = os.path.join(control, "commands")
    done = 0
    while True:
        pub.serve_replays()
        lines = open(commands).read().splitlines() if os.path.exists(commands) else []
        for line in lines[done:]:
            done += 1
            if line.strip() and not pub.run(line.split()):
                return
            with open(os.path.join(control, "done.tmp"), "w") as f:
                f.write(str(done))
            os.replace(os.path.join(control, "done.tmp"), os.path.join(control, "done"))
        time.sleep(0.01)


if __name__ == "__main__":
    main()
