"""facts/alarms.py: the console's address per partition, the alarm ARNs the policies name, where a subscriber may
be."""

from __future__ import annotations

import pytest

from hyperpod_inference.facts import alarms as a


@pytest.mark.parametrize(("region", "home"), [
    ("us-west-2", "https://us-west-2.console.aws.amazon.com"),
    ("cn-north-1", "https://console.amazonaws.cn"),
    ("us-gov-west-1", "https://console.amazonaws-us-gov.com"),
    ("us-iso-east-1", None),  # an isolated partition: no public console address
    ("${Token[AWS.Region.8]}", None),  # not known at synth
])
def test_the_console_home_follows_the_partition(region, home):
    assert a.console_home(region) == home
    url = a.dashboard_url(region, "S-inference")
    assert url == (f"{home}/cloudwatch/home?region={region}#dashboards/dashboard/S-inference" if home else None)


def test_alarm_arns_are_formed_from_the_name():
    assert a.alarm_arn("aws-cn", "cn-north-1", "111122223333", "S-ns-e-health") == \
        "arn:aws-cn:cloudwatch:cn-north-1:111122223333:alarm:S-ns-e-health"


def test_a_subscriber_must_be_in_the_topics_region_and_partition():
    queue = a.parse_subscription("arn:aws:sqs:us-west-2:111122223333:q")
    assert isinstance(queue, a.Subscription)
    assert a.subscription_place_problem(queue, region="us-west-2") is None
    assert "is in us-west-2; the alarm topic is in the stack's region (us-east-1)" in \
        a.subscription_place_problem(queue, region="us-east-1")
    assert "SNS does not deliver across partitions" in a.subscription_place_problem(queue, region="cn-north-1")
    mail = a.parse_subscription("a@example.com")
    assert isinstance(mail, a.Subscription) and a.subscription_place_problem(mail, region="cn-north-1") is None
