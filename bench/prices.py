"""us-east-1 on-demand list prices, kept as data with the page each comes from and the date it was recorded.

One copy for every priced figure: bench/monthly_cost.py (the worked month) and bench/cost.py (the cost per
million events, per million runs and per 1,000 tables) read them from here. Free tiers are left out
(the first million Glue requests a month, X-Ray's first 100,000 traces, Lambda's monthly allowance): the figures
are what a stack costs once it is past them. Lambda is priced for arm64, the template's architecture.
"""

from __future__ import annotations

from dataclasses import dataclass

RECORDED = "2026-12-07"  # the day these list prices were last checked against their pages


@dataclass(frozen=True)
class Price:
    dollars: float  # per unit
    unit: str
    source: str
    recorded: str = RECORDED


LAMBDA = "https://aws.amazon.com/lambda/pricing/"
DYNAMODB = "https://aws.amazon.com/dynamodb/pricing/on-demand/"
S3 = "https://aws.amazon.com/s3/pricing/"
GLUE = "https://aws.amazon.com/glue/pricing/"
API_GATEWAY = "https://aws.amazon.com/api-gateway/pricing/"
XRAY = "https://aws.amazon.com/xray/pricing/"
CLOUDWATCH = "https://aws.amazon.com/cloudwatch/pricing/"
SQS = "https://aws.amazon.com/sqs/pricing/"
SECRETS = "https://aws.amazon.com/secrets-manager/pricing/"

PRICES: dict[str, Price] = {
    "lambda_request": Price(0.20 / 1e6, "Lambda request", LAMBDA),
    "lambda_gb_second": Price(0.0000133334, "Lambda GB-second (arm64)", LAMBDA),
    "dynamodb_write_unit": Price(0.625 / 1e6, "DynamoDB on-demand write request unit", DYNAMODB),
    "dynamodb_read_unit": Price(0.125 / 1e6, "DynamoDB on-demand read request unit", DYNAMODB),
    "dynamodb_storage_gb_month": Price(0.25, "DynamoDB Standard storage, GB-month", DYNAMODB),
    "dynamodb_pitr_gb_month": Price(0.20, "DynamoDB point-in-time recovery, GB-month", DYNAMODB),
    "s3_get": Price(0.40 / 1e6, "S3 Standard GET, HEAD and other GET-class request", S3),
    "s3_put_list": Price(5.00 / 1e6, "S3 Standard PUT, COPY, POST and LIST request", S3),
    "glue_request": Price(1.00 / 1e6, "Glue Data Catalog request (GetTable), past the free million", GLUE),
    "api_gateway_request": Price(3.50 / 1e6, "API Gateway REST API request (first 333 M a month)", API_GATEWAY),
    "xray_trace": Price(5.00 / 1e6, "X-Ray trace recorded", XRAY),
    "cloudwatch_metric_month": Price(0.30, "CloudWatch custom metric, month (first 10,000)", CLOUDWATCH),
    "cloudwatch_alarm_month": Price(0.10, "CloudWatch standard-resolution alarm metric, month", CLOUDWATCH),
    "cloudwatch_dashboard_month": Price(3.00, "CloudWatch dashboard, month", CLOUDWATCH),
    "cloudwatch_logs_gb": Price(0.50, "CloudWatch Logs ingestion (standard), GB", CLOUDWATCH),
    "sqs_request": Price(0.40 / 1e6, "SQS standard queue request", SQS),
    "secret_month": Price(0.40, "Secrets Manager secret, month", SECRETS),
    "secrets_api_call": Price(0.05 / 10_000, "Secrets Manager API call", SECRETS),
}


def price(name: str) -> float:
    return PRICES[name].dollars


def markdown() -> str:
    """The price list as a table: what each is, per million or per month, its page and when it was recorded."""
    out = ["| price | us-east-1 list | source | recorded |", "|---|---|---|---|"]
    for p in PRICES.values():
        shown = f"${p.dollars * 1e6:,.2f} per million" if p.dollars < 0.001 else f"${p.dollars:,.2f}"
        if "GB-second" in p.unit:
            shown = f"${p.dollars:.10f}".rstrip("0")
        out.append(f"| {p.unit} | {shown} | <{p.source}> | {p.recorded} |")
    return "\n".join(out)
