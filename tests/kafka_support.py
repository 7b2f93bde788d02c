"""Writing test records to the broker that tests/conftest.py starts (fixture ``kafka_bootstrap``)."""


def produce(bootstrap, topic, records, partitions=1):
    """Creates ``topic`` if needed and writes ``records`` (key, value bytes, and optionally the
    partition: else the key's) in order; returns nothing until the broker has them all."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(topic, partitions)])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value, *partition in records:
        producer.produce(topic, key=key, value=value, **({"partition": partition[0]} if partition else {}))
    assert producer.flush(30) == 0


def consume(bootstrap, topic):
    """Every record of ``topic`` a read_committed consumer sees, (key, value) in offset order per
    partition, partitions one after another."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "tests-consume",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        got, open_ = {p: [] for p in partitions}, set(partitions)
        while open_:
            message = consumer.poll(30)
            assert message is not None, f"no answer reading {topic}"
            if message.error():
                assert message.error().code() == -191, message.error()  # the end of a partition
                open_.discard(message.partition())
            else:
                got[message.partition()].append((message.key(), message.value()))
        return [record for p in partitions for record in got[p]]
    finally:
        consumer.close()
