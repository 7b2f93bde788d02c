"""The second consumer of the compose stack (docker-compose.yml, service ``changes-reader``): reads a
view's Kafka changelog in the upsert format (a record per changed row, keyed by the row key as JSON;
a tombstone, a null value, deletes) from the start of the topic as a ``read_committed`` consumer,
keeps the view's table as it stands (key -> row), and prints each change as a line of JSON:
``{"op": "upsert" | "delete", "key": {...}, "row": {...} | null, "rows": <rows in the table>}``.

    python deploy/read_changelog.py --bootstrap-servers kafka:9092 --topic ticks_changes [--idle 10]

``--idle S``: stop once no record has come for S seconds (default: read until stopped). Needs
confluent-kafka (``pip install overwindow[kafka]``). O(1) a record, O(rows of the view) memory.
"""

import argparse
import json
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--idle", type=float, default=None, help="stop after this many quiet seconds")
    args = parser.parse_args(argv)
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap_servers,
            "group.id": "overwindow-changelog-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",  # a killed job's unfinished batch is not the view
        }
    )
    while args.topic not in consumer.list_topics(timeout=30).topics:  # the view creates it
        if args.idle is not None:
            print(f"no topic {args.topic}", file=sys.stderr)
            return 1
        time.sleep(2)
    partitions = consumer.list_topics(args.topic, timeout=30).topics[args.topic].partitions
    consumer.assign([TopicPartition(args.topic, p, 0) for p in partitions])  # the whole changelog
    table = {}
    try:
        while True:
            message = consumer.poll(args.idle if args.idle is not None else 1.0)
            if message is None:
                if args.idle is not None:
                    return 0
                continue
            if message.error():
                print(f"{args.topic}: {message.error()}", file=sys.stderr)
                continue
            row = None if message.value() is None else json.loads(message.value())
            if row is None:
                table.pop(message.key(), None)
            else:
                table[message.key()] = row
            key = json.loads(message.key())
            change = {"op": "delete" if row is None else "upsert", "key": key, "row": row, "rows": len(table)}
            print(json.dumps(change), flush=True)
    finally:
        consumer.close()


if __name__ == "__main__":
    sys.exit(main())
