-- A PostgreSQL store as the version before apps were kept apart left it (schema 12), filled by its
-- translator, sender, api and `liveline dlq replay`; pg_dump --inserts, schema-qualified names and session settings removed.
CREATE TABLE activities (
    id text NOT NULL,
    domain text NOT NULL,
    attributes_type text NOT NULL,
    user_id text NOT NULL,
    attributes text,
    content_state text,
    last_event_ms bigint,
    started_ms bigint,
    ended_ms bigint,
    end_reason text,
    budget_spent bigint DEFAULT 0 NOT NULL,
    budget_window_ms bigint,
    last_event_id text,
    last_status text,
    last_push_s bigint,
    push_to_start_sent_ms bigint
);
CREATE TABLE activity_trace (
    seq bigint NOT NULL,
    activity_id text NOT NULL,
    at_ms bigint NOT NULL,
    kind text NOT NULL,
    detail text NOT NULL
);
CREATE SEQUENCE activity_trace_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;
ALTER SEQUENCE activity_trace_seq_seq OWNED BY activity_trace.seq;
CREATE TABLE audit (
    seq bigint NOT NULL,
    at_ms bigint NOT NULL,
    actor text NOT NULL,
    actor_source text NOT NULL,
    command text NOT NULL,
    parameters text NOT NULL,
    outcome text NOT NULL
);
CREATE SEQUENCE audit_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;
ALTER SEQUENCE audit_seq_seq OWNED BY audit.seq;
CREATE TABLE channels (
    domain text NOT NULL,
    key text NOT NULL,
    channel_id text NOT NULL,
    created_ms bigint NOT NULL,
    deleted_ms bigint
);
CREATE TABLE created_channels (
    channel_id text NOT NULL,
    created_ms bigint NOT NULL
);
CREATE TABLE dead_letters (
    id text NOT NULL,
    reason text NOT NULL,
    source text NOT NULL,
    message text NOT NULL,
    domain text,
    activity_id text,
    event_id text,
    job_id text,
    payload_kind text NOT NULL,
    body bytea NOT NULL,
    routing_key text NOT NULL,
    attempts bigint NOT NULL,
    first_failed_ms bigint NOT NULL,
    last_failed_ms bigint NOT NULL,
    kept_ms bigint NOT NULL,
    deaths text NOT NULL,
    resolution text,
    resolved_ms bigint,
    resolved_count bigint DEFAULT 0 NOT NULL,
    claim text,
    claim_ms bigint
);
CREATE TABLE event_claims (
    event_id text NOT NULL,
    producer text NOT NULL,
    digest text NOT NULL,
    received_ms bigint NOT NULL,
    published_ms bigint
);
CREATE TABLE event_outcomes (
    outcome_id text NOT NULL,
    event_id text NOT NULL,
    domain text NOT NULL,
    at_ms bigint NOT NULL,
    body text NOT NULL
);
CREATE TABLE follows (
    user_id text NOT NULL,
    topic text NOT NULL,
    followed_ms bigint NOT NULL
);
CREATE TABLE late_starts (
    activity_id text NOT NULL,
    user_id text NOT NULL,
    device_id text NOT NULL,
    queued_ms bigint NOT NULL,
    claimed_ms bigint
);
CREATE TABLE preferences (
    user_id text NOT NULL,
    activities_enabled boolean NOT NULL,
    frequent_pushes_enabled boolean NOT NULL
);
CREATE TABLE push_to_start_tokens (
    user_id text NOT NULL,
    attributes_type text NOT NULL,
    token text NOT NULL,
    registered_ms bigint NOT NULL,
    used_ms bigint,
    environment text DEFAULT 'production'::text NOT NULL,
    device_id text DEFAULT 'default'::text NOT NULL,
    os_version text,
    locale text,
    content_version bigint
);
CREATE TABLE schema_version (
    version integer NOT NULL,
    applied_ms bigint NOT NULL
);
CREATE TABLE start_topics (
    topic text NOT NULL,
    activity_id text NOT NULL,
    audience_read_ms bigint NOT NULL
);
CREATE TABLE update_tokens (
    activity_id text NOT NULL,
    device_id text NOT NULL,
    token text NOT NULL,
    registered_ms bigint NOT NULL,
    environment text DEFAULT 'production'::text NOT NULL,
    locale text,
    content_version bigint
);
ALTER TABLE ONLY activity_trace ALTER COLUMN seq SET DEFAULT nextval('activity_trace_seq_seq'::regclass);
ALTER TABLE ONLY audit ALTER COLUMN seq SET DEFAULT nextval('audit_seq_seq'::regclass);
INSERT INTO activities VALUES ('order-95bcda5a', 'delivery', 'DeliveryAttributes', 'foodie-95bcda5a', '{"orderNumber":4521,"restaurantName":"Pizza Place"}', '{"currentStep":"delivered","driverName":"Alex","estimatedDeliveryTime":[818305596.8903496,818306196.8903496]}', 1796611787890, 1796611778890, 1796611787890, 'delivered', 2, 1796611897214, '7184a4e1-c1ab-4b88-b613-44a0fb42b4ae', 'delivered', 1796611787, NULL);
INSERT INTO activities VALUES ('game-95bcda5a', 'score', 'ScoreAttributes', '', '{"awayTeam":{"abbreviation":"CHE","name":"Chelsea"},"gameId":"game-95bcda5a","homeTeam":{"abbreviation":"ARS","name":"Arsenal"},"league":"Premier League"}', '{"awayScore":1,"clock":"90''","homeScore":2,"lastPlay":"Full time","period":"2nd half","status":"final"}', 1796611790890, 1796611782890, 1796611790890, 'final', 4, 1796611897214, '34f160d1-ded1-45b8-a2fc-b6e783dd72a1', 'final', 1796611790, 1796611782890);
INSERT INTO activities VALUES ('order-95f8cf34', 'delivery', 'DeliveryAttributes', 'foodie-95f8cf34', '{"orderNumber":4521,"restaurantName":"Pizza Place"}', '{"currentStep":"delivered","driverName":"Alex","estimatedDeliveryTime":[818305559.314069,818306159.3140692]}', 1796611750314, NULL, 1796611750314, 'delivered', 0, NULL, 'b15ee56e-fb5c-4e92-ad45-d68768876e33', 'delivered', NULL, NULL);
INSERT INTO activities VALUES ('ride-95bcda5a', 'ride', 'RideAttributes', 'rider-95bcda5a', '{"dropoffLocation":"456 Oak Ave","pickupLocation":"123 Main St","riderName":"Jordan"}', '{"distanceRemaining":0,"driverName":"Maria","driverPhoto":"car.fill","etaEndSeconds":1796612316,"etaStartSeconds":1796612016,"status":"completed","vehicleDescription":"White Toyota Camry"}', 1796611791890, 1796611777890, 1796611791890, 'completed', 2, 1796611897525, '615d8f40-c360-4b82-8889-8374ae18884f', 'completed', 1796611791, NULL);
INSERT INTO activities VALUES ('ride-95f8cf34', 'ride', 'RideAttributes', 'rider-95f8cf34', '{"dropoffLocation":"456 Oak Ave","pickupLocation":"123 Main St","riderName":"Jordan"}', '{"distanceRemaining":0,"driverName":"Maria","driverPhoto":"car.fill","etaEndSeconds":1796612279,"etaStartSeconds":1796611979,"status":"completed","vehicleDescription":"White Toyota Camry"}', 1796611754314, NULL, 1796611754314, 'completed', 0, NULL, 'f0e05306-aaa5-46e0-8951-6388f195e1f2', 'completed', NULL, NULL);
INSERT INTO activities VALUES ('game-95f8cf34', 'score', 'ScoreAttributes', '', '{"awayTeam":{"abbreviation":"CHE","name":"Chelsea"},"gameId":"game-95f8cf34","homeTeam":{"abbreviation":"ARS","name":"Arsenal"},"league":"Premier League"}', '{"awayScore":1,"clock":"90''","homeScore":2,"lastPlay":"Full time","period":"2nd half","status":"final"}', 1796611753314, NULL, 1796611753314, 'final', 3, 1796611893088, 'a27d8113-8338-4684-b1a5-967f340f1e90', 'final', 1796611753, NULL);
INSERT INTO activities VALUES ('ride-next-1', 'ride', 'RideAttributes', 'rider-95bcda5a', NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO activity_trace VALUES (1, 'ride-95f8cf34', 1796611893088, 'dropped', 'event 013d05eb-50ed-4c47-8ba0-726e317f7a36 at 2026-12-07T02:49:00.314Z (driverAssigned): noTarget: no update token and no push-to-start token for RideAttributes');
INSERT INTO activity_trace VALUES (2, 'order-95f8cf34', 1796611893088, 'dropped', 'event 7c96e75d-b1d3-4edb-86b8-b4292315a92a at 2026-12-07T02:49:01.314Z (confirmed): noTarget: no update token and no push-to-start token for DeliveryAttributes');
INSERT INTO activity_trace VALUES (3, 'game-95f8cf34', 1796611893088, 'push-decided', 'event 836bd6ad-2963-421d-bd4c-76876f439697 at 2026-12-07T02:49:02.314Z (scheduled): entered status scheduled; 1 job(s) at priority 5: channel game-95f8cf34');
INSERT INTO activity_trace VALUES (4, 'ride-95f8cf34', 1796611893088, 'dropped', 'event 7bbe3609-ab67-48d4-ba79-b3109793ff17 at 2026-12-07T02:49:03.314Z (driverEnRoute): noTarget: no update token and no push-to-start token for RideAttributes');
INSERT INTO activity_trace VALUES (5, 'order-95f8cf34', 1796611893088, 'dropped', 'event d2387812-0791-4436-863b-0435f124df79 at 2026-12-07T02:49:04.314Z (pickedUp): noTarget: no update token and no push-to-start token for DeliveryAttributes');
INSERT INTO activity_trace VALUES (6, 'game-95f8cf34', 1796611893088, 'dropped', 'event 28317902-a357-4849-9d6f-b51edb1d06d6 at 2026-12-07T02:49:05.314Z (live): noTarget: no device of a follower of team:arsenal, team:chelsea, league:premier-league has a push-to-start token');
INSERT INTO activity_trace VALUES (7, 'ride-95f8cf34', 1796611893088, 'dropped', 'event 6325f62a-d6db-4eb0-8eb3-5782d7acbce0 at 2026-12-07T02:49:06.314Z (driverArrived): noTarget: no update token and no push-to-start token for RideAttributes');
INSERT INTO activity_trace VALUES (8, 'order-95f8cf34', 1796611893088, 'dropped', 'event 002d7a0a-efac-4455-9d59-95ed94e66f86 at 2026-12-07T02:49:07.314Z (delivering): noTarget: no update token and no push-to-start token for DeliveryAttributes');
INSERT INTO activity_trace VALUES (9, 'game-95f8cf34', 1796611893088, 'push-decided', 'event c8715b04-fc4e-449e-bbea-03ddd8c1e011 at 2026-12-07T02:49:08.314Z (live): routine update in status live; change rule score fired; 1 job(s) at priority 10: channel game-95f8cf34');
INSERT INTO activity_trace VALUES (10, 'ride-95f8cf34', 1796611893088, 'dropped', 'event 348ad5ec-506f-4992-a486-9cbc94234ab1 at 2026-12-07T02:49:09.314Z (inProgress): noTarget: no update token and no push-to-start token for RideAttributes');
INSERT INTO activity_trace VALUES (11, 'order-95f8cf34', 1796611893088, 'dropped', 'event b15ee56e-fb5c-4e92-ad45-d68768876e33 at 2026-12-07T02:49:10.314Z (delivered): noTarget: no update token; an activity is not started only to end it');
INSERT INTO activity_trace VALUES (12, 'game-95f8cf34', 1796611893088, 'push-decided', 'event bc87a2f9-7718-4386-be74-49a93706078c at 2026-12-07T02:49:11.314Z (live): routine update in status live; change rule score fired; 1 job(s) at priority 10: channel game-95f8cf34');
INSERT INTO activity_trace VALUES (13, 'ride-95f8cf34', 1796611893088, 'dropped', 'event b3ac790a-115a-413f-8d5d-d7df0e996f6f at 2026-12-07T02:49:12.314Z (arriving): noTarget: no update token and no push-to-start token for RideAttributes');
INSERT INTO activity_trace VALUES (14, 'game-95f8cf34', 1796611893088, 'push-decided', 'event a27d8113-8338-4684-b1a5-967f340f1e90 at 2026-12-07T02:49:13.314Z (final): end for terminal status final; 1 job(s) at priority 10: channel game-95f8cf34');
INSERT INTO activity_trace VALUES (15, 'ride-95f8cf34', 1796611893088, 'dropped', 'event f0e05306-aaa5-46e0-8951-6388f195e1f2 at 2026-12-07T02:49:14.314Z (completed): noTarget: no update token; an activity is not started only to end it');
INSERT INTO activity_trace VALUES (16, 'game-95f8cf34', 1796611893179, 'apns-outcome', 'job 2650ca18817e event 836bd6ad-2963-421d-bd4c-76876f439697 update to channel game-95f8cf34: delivered (200), attempt 1, apns-id df442393-1ba5-5b8c-a446-01fbc6709cc5, apns-unique-id 207009d3-fa06-46e0-b69e-6969163b6218');
INSERT INTO activity_trace VALUES (17, 'game-95f8cf34', 1796611893182, 'apns-outcome', 'job 95d66617afea event c8715b04-fc4e-449e-bbea-03ddd8c1e011 update to channel game-95f8cf34: delivered (200), attempt 1, apns-id dfc930df-3f0b-5512-82e8-9d9ed9e56147, apns-unique-id 4315ab3d-bb1e-47ac-84f0-0f72e9468836');
INSERT INTO activity_trace VALUES (18, 'game-95f8cf34', 1796611893187, 'apns-outcome', 'job 2a43e94b57b5 event bc87a2f9-7718-4386-be74-49a93706078c update to channel game-95f8cf34: delivered (200), attempt 1, apns-id 072ae63a-9d64-5e7c-b283-758bc000c03b, apns-unique-id ed1fe5eb-112c-4ebd-b1d5-71cdc45dd04b');
INSERT INTO activity_trace VALUES (19, 'game-95f8cf34', 1796611893197, 'apns-outcome', 'job 431e169ea003 event a27d8113-8338-4684-b1a5-967f340f1e90 end to channel game-95f8cf34: delivered (200), attempt 1, apns-id 6fcd76b0-158b-5c98-98b0-a506b280f735, apns-unique-id 6b4d6a00-96cd-4070-a877-2885f55f2d9f');
INSERT INTO activity_trace VALUES (20, 'ride-95bcda5a', 1796611896909, 'push-decided', 'event ec0ca60f-0e93-440d-85f9-0af09401e758 at 2026-12-07T02:49:37.890Z (driverAssigned): entered status driverAssigned; 2 job(s) at priority 5: update token 5109c237…, update token 7b223268…');
INSERT INTO activity_trace VALUES (21, 'order-95bcda5a', 1796611896909, 'push-decided', 'event 19c060f3-fab6-4e15-9d96-92e42e77de01 at 2026-12-07T02:49:38.890Z (confirmed): entered status confirmed; 1 job(s) at priority 5: update token 2fd4bc57…');
INSERT INTO activity_trace VALUES (22, 'game-95bcda5a', 1796611896909, 'push-decided', 'event f4fd1956-e9cd-4884-91ea-984679d04d67 at 2026-12-07T02:49:39.890Z (scheduled): entered status scheduled; 1 job(s) at priority 5: channel game-95bcda5a');
INSERT INTO activity_trace VALUES (23, 'game-95bcda5a', 1796611896956, 'apns-outcome', 'job 1fe77e50e800 event f4fd1956-e9cd-4884-91ea-984679d04d67 update to channel game-95bcda5a: delivered (200), attempt 1, apns-id 1a8c0f67-ed93-5e13-8f68-131a053d54de, apns-unique-id 21f073f7-69ee-46df-a149-ce5350ea9bed');
INSERT INTO activity_trace VALUES (24, 'ride-95bcda5a', 1796611896959, 'apns-outcome', 'job 7adcb73c4227 event ec0ca60f-0e93-440d-85f9-0af09401e758 update to update token 7b223268…: delivered (200), attempt 1, apns-id 6fc2196d-42f5-551f-913b-effc18a163f9, apns-unique-id 90ebea46-68e4-4ad5-a9cb-cdc30004b711');
INSERT INTO activity_trace VALUES (25, 'order-95bcda5a', 1796611896960, 'apns-outcome', 'job 5a21f534854a event 19c060f3-fab6-4e15-9d96-92e42e77de01 update to update token 2fd4bc57…: delivered (200), attempt 1, apns-id f8ba1455-9318-5f53-a969-c347c1ef8d14, apns-unique-id d1e3263f-ddc0-490e-bb12-2fab289d0f42');
INSERT INTO activity_trace VALUES (26, 'ride-95bcda5a', 1796611896960, 'apns-outcome', 'job a3e68b2afbfe event ec0ca60f-0e93-440d-85f9-0af09401e758 update to update token 5109c237…: delivered (200), attempt 1, apns-id e97fd7b1-95e6-50d4-9bd8-10b80c20c951, apns-unique-id 8634679c-3bc0-4b1e-8897-594f7d5817af');
INSERT INTO activity_trace VALUES (27, 'ride-95bcda5a', 1796611897214, 'push-decided', 'event 951b8f3f-01a0-400a-91e0-922fae63e986 at 2026-12-07T02:49:40.890Z (driverEnRoute): entered status driverEnRoute; 2 job(s) at priority 5: update token 5109c237…, update token 7b223268…');
INSERT INTO activity_trace VALUES (28, 'order-95bcda5a', 1796611897214, 'push-decided', 'event deac159c-b83d-484a-89f1-eb41f85cde50 at 2026-12-07T02:49:41.890Z (pickedUp): entered status pickedUp; 1 job(s) at priority 10: update token 2fd4bc57…');
INSERT INTO activity_trace VALUES (29, 'game-95bcda5a', 1796611897214, 'push-decided', 'event b9662d24-7bce-4af8-b054-7681b84c65a4 at 2026-12-07T02:49:42.890Z (live): start for the followers of team:arsenal, team:chelsea, league:premier-league: 0 device(s) on the channel, 4 per token; start for status live; 4 job(s) at priority 10: pushToStart token f5d690ce…, pushToStart token 0e055501…, pushToStart token cab01e6d…, pushToStart token 1a6c102d…');
INSERT INTO activity_trace VALUES (30, 'ride-95bcda5a', 1796611897249, 'apns-outcome', 'job b0791bf2c73b event 951b8f3f-01a0-400a-91e0-922fae63e986 update to update token 5109c237…: delivered (200), attempt 1, apns-id 754552c0-3537-5861-a6fb-14b536b13620, apns-unique-id 7c3f0600-1286-45c6-95a9-0d01a6a945a4');
INSERT INTO activity_trace VALUES (31, 'ride-95bcda5a', 1796611897253, 'apns-outcome', 'job b4087622003a event 951b8f3f-01a0-400a-91e0-922fae63e986 update to update token 7b223268…: delivered (200), attempt 1, apns-id c5f92aca-5584-527e-9daf-8412afb0c31b, apns-unique-id b5dcd5e1-4887-4937-a217-12ae4259e466');
INSERT INTO activity_trace VALUES (32, 'order-95bcda5a', 1796611897253, 'apns-outcome', 'job dec6aa0f2945 event deac159c-b83d-484a-89f1-eb41f85cde50 update to update token 2fd4bc57…: delivered (200), attempt 1, apns-id fa755040-879a-5a95-837c-6c098b798094, apns-unique-id 2d7c5827-6724-48ab-8eee-7e2f2d3711da');
INSERT INTO activity_trace VALUES (33, 'game-95bcda5a', 1796611897253, 'apns-outcome', 'job 4b95a82baddb event b9662d24-7bce-4af8-b054-7681b84c65a4 start to pushToStart token f5d690ce…: delivered (200), attempt 1, apns-id 40392370-9007-50c3-88ee-fed7c60405ed, apns-unique-id 7947d9fd-9f9f-4ef9-9bcf-c4e65509c0b0');
INSERT INTO activity_trace VALUES (34, 'game-95bcda5a', 1796611897253, 'apns-outcome', 'job ed597775f96a event b9662d24-7bce-4af8-b054-7681b84c65a4 start to pushToStart token 0e055501…: delivered (200), attempt 1, apns-id f3a822f5-da6a-5805-af0e-c9fff8eddb1e, apns-unique-id 3c2c4f41-991c-4be1-b3c2-ff1f7a207cf9');
INSERT INTO activity_trace VALUES (35, 'game-95bcda5a', 1796611897253, 'apns-outcome', 'job dc2df09f8617 event b9662d24-7bce-4af8-b054-7681b84c65a4 start to pushToStart token cab01e6d…: delivered (200), attempt 1, apns-id c77dfdb9-3840-5ec2-a0f1-3d300879d80e, apns-unique-id e9ff6b3f-b366-4c6a-82fe-780c2bffb31d');
INSERT INTO activity_trace VALUES (36, 'game-95bcda5a', 1796611897253, 'apns-outcome', 'job 02887a5162d1 event b9662d24-7bce-4af8-b054-7681b84c65a4 start to pushToStart token 1a6c102d…: delivered (200), attempt 1, apns-id bea2af68-4312-55d1-9a15-08970d5b116a, apns-unique-id d47525dd-ae12-411b-96a3-24d65dd4c760');
INSERT INTO activity_trace VALUES (40, 'ride-95bcda5a', 1796611897556, 'apns-outcome', 'job 7153cf34883e event 53b65ff4-bb29-42c4-9ff9-76e165b8ddc6 update to update token 7b223268…: delivered (200), attempt 1, apns-id 28d3a89f-55f0-5acb-9faa-2fd121550d6f, apns-unique-id a443b7ec-f9d8-4bee-b55a-e7b0501a8b6e');
INSERT INTO activity_trace VALUES (41, 'ride-95bcda5a', 1796611897556, 'apns-outcome', 'job fad0ed6ec5b2 event 53b65ff4-bb29-42c4-9ff9-76e165b8ddc6 update to update token 5109c237…: delivered (200), attempt 1, apns-id 81e12e50-1532-51a8-9abc-ac19f12bf961, apns-unique-id 695756ed-41f3-422c-aadd-535c454cde22');
INSERT INTO activity_trace VALUES (42, 'order-95bcda5a', 1796611897556, 'apns-outcome', 'job 8f1af0e70dba event fb4c7578-5a76-40d6-acb6-189986f2153b update to update token 2fd4bc57…: delivered (200), attempt 1, apns-id 68737c06-cd65-589d-863a-5c6963bb25ba, apns-unique-id 9bb182b6-fe15-4b0b-94f0-479df1328852');
INSERT INTO activity_trace VALUES (43, 'game-95bcda5a', 1796611897556, 'apns-outcome', 'job 8d1fe499eab7 event 4dc31a20-0ffe-483c-baba-5f2f6bc5d71a update to update token 1a6c102d…: delivered (200), attempt 1, apns-id 8abc1964-6112-5455-934b-ef941fe4906e, apns-unique-id b59d2046-1997-4c41-9250-915461d7ead9');
INSERT INTO activity_trace VALUES (44, 'game-95bcda5a', 1796611897558, 'apns-outcome', 'job 7c91739f6c61 event 4dc31a20-0ffe-483c-baba-5f2f6bc5d71a update to channel game-95bcda5a: delivered (200), attempt 1, apns-id b13aac43-180e-575d-8cb8-af585909b778, apns-unique-id 1e9b440c-7ce5-4b2d-8345-94ca5a9a57e2');
INSERT INTO activity_trace VALUES (48, 'ride-95bcda5a', 1796611897856, 'apns-outcome', 'job 2d3b4a9c1afc event b89646b8-d931-4812-86bf-ccfce5a56826 update to update token 7b223268…: delivered (200), attempt 1, apns-id cf12fe9a-e54d-5b98-a00a-0a70f8a18388, apns-unique-id eeb5951c-a821-4635-aea0-e1a07b6ea5fc');
INSERT INTO activity_trace VALUES (49, 'ride-95bcda5a', 1796611897856, 'apns-outcome', 'job bc8f040f5b60 event b89646b8-d931-4812-86bf-ccfce5a56826 update to update token 5109c237…: delivered (200), attempt 1, apns-id f2a31611-c7e1-58a4-9915-2a589b5c67b9, apns-unique-id beeec83d-35b3-4e6b-8041-10733a3f808e');
INSERT INTO activity_trace VALUES (50, 'game-95bcda5a', 1796611897856, 'apns-outcome', 'job 813dddd26526 event 6b4389bc-6d86-4860-b571-65dfeeef922b update to update token 1a6c102d…: delivered (200), attempt 1, apns-id 323fb0f0-4ab3-5f72-9d23-567ee5d5f1b3, apns-unique-id 6e7a0609-023e-420c-8c7c-2d9ba35309bd');
INSERT INTO activity_trace VALUES (51, 'order-95bcda5a', 1796611897857, 'apns-outcome', 'job fc6909142eac event 7184a4e1-c1ab-4b88-b613-44a0fb42b4ae end to update token 2fd4bc57…: delivered (200), attempt 1, apns-id e4abd3eb-ac8b-5a08-99e0-a4b0029e4164, apns-unique-id 9b5e1483-8796-4c13-b776-631f5ff0be7e');
INSERT INTO activity_trace VALUES (52, 'game-95bcda5a', 1796611897858, 'apns-outcome', 'job 07d5e7caba9d event 6b4389bc-6d86-4860-b571-65dfeeef922b update to channel game-95bcda5a: delivered (200), attempt 1, apns-id 85991229-ed6d-5c31-8554-4b3df4900044, apns-unique-id 520ab1cb-2026-46dd-8962-8fc3960a43bc');
INSERT INTO activity_trace VALUES (55, 'ride-95bcda5a', 1796611898161, 'apns-outcome', 'job 9d2c25598897 event 88bebda2-eff0-4dae-8c88-17f453551003 update to update token 5109c237…: delivered (200), attempt 1, apns-id c7cd559f-6e26-5463-9906-bcd64177a59e, apns-unique-id 52bcff60-aa91-4f1b-9129-5b563bbacdab');
INSERT INTO activity_trace VALUES (56, 'ride-95bcda5a', 1796611898162, 'apns-outcome', 'job a8773f2445a7 event 88bebda2-eff0-4dae-8c88-17f453551003 update to update token 7b223268…: delivered (200), attempt 1, apns-id 0fb146b8-5407-5515-aa9f-893ca98a922f, apns-unique-id c9275fad-d702-451d-a688-399709af44ee');
INSERT INTO activity_trace VALUES (57, 'game-95bcda5a', 1796611898162, 'apns-outcome', 'job 31ce38ff13be event 34f160d1-ded1-45b8-a2fc-b6e783dd72a1 end to update token 1a6c102d…: delivered (200), attempt 1, apns-id 0723550a-8307-5f9c-a187-fb70a01d1e0f, apns-unique-id db924b40-bd60-44bc-b416-c34c96f5dd0a');
INSERT INTO activity_trace VALUES (58, 'game-95bcda5a', 1796611898169, 'apns-outcome', 'job d261e74e427a event 34f160d1-ded1-45b8-a2fc-b6e783dd72a1 end to channel game-95bcda5a: delivered (200), attempt 1, apns-id a2141a88-79f9-5d05-81ad-07afc57e7ebc, apns-unique-id f25d5bbf-e4be-4512-86ac-312d3919ea07');
INSERT INTO activity_trace VALUES (60, 'ride-95bcda5a', 1796611898455, 'apns-outcome', 'job 9ba053188ecd event 615d8f40-c360-4b82-8889-8374ae18884f end to update token 7b223268…: delivered (200), attempt 1, apns-id 75cfff0c-cce6-5416-9b73-97f0150f6865, apns-unique-id ceb3d84a-d7b1-46fb-aaa7-628dd516a8dd');
INSERT INTO activity_trace VALUES (61, 'ride-95bcda5a', 1796611898455, 'apns-outcome', 'job 4d648013315f event 615d8f40-c360-4b82-8889-8374ae18884f end to update token 5109c237…: delivered (200), attempt 1, apns-id adf463f5-7dbc-5537-baa7-3264e64ab1ed, apns-unique-id 447a1bd6-375d-42fa-8ad5-16ac44bee5f9');
INSERT INTO activity_trace VALUES (37, 'ride-95bcda5a', 1796611897525, 'push-decided', 'event 53b65ff4-bb29-42c4-9ff9-76e165b8ddc6 at 2026-12-07T02:49:43.890Z (driverArrived): entered status driverArrived; alert in de, its own text; 2 job(s) at priority 10: update token 5109c237…, update token 7b223268…');
INSERT INTO activity_trace VALUES (38, 'order-95bcda5a', 1796611897525, 'push-decided', 'event fb4c7578-5a76-40d6-acb6-189986f2153b at 2026-12-07T02:49:44.890Z (delivering): entered status delivering; 1 job(s) at priority 5: update token 2fd4bc57…');
INSERT INTO activity_trace VALUES (39, 'game-95bcda5a', 1796611897525, 'push-decided', 'event 4dc31a20-0ffe-483c-baba-5f2f6bc5d71a at 2026-12-07T02:49:45.890Z (live): routine update in status live; change rule score fired; 2 job(s) at priority 10: channel game-95bcda5a, update token 1a6c102d…');
INSERT INTO activity_trace VALUES (45, 'ride-95bcda5a', 1796611897828, 'push-decided', 'event b89646b8-d931-4812-86bf-ccfce5a56826 at 2026-12-07T02:49:46.890Z (inProgress): entered status inProgress; 2 job(s) at priority 5: update token 5109c237…, update token 7b223268…');
INSERT INTO activity_trace VALUES (46, 'order-95bcda5a', 1796611897828, 'push-decided', 'event 7184a4e1-c1ab-4b88-b613-44a0fb42b4ae at 2026-12-07T02:49:47.890Z (delivered): end for terminal status delivered; 1 job(s) at priority 10: update token 2fd4bc57…');
INSERT INTO activity_trace VALUES (47, 'game-95bcda5a', 1796611897828, 'push-decided', 'event 6b4389bc-6d86-4860-b571-65dfeeef922b at 2026-12-07T02:49:48.890Z (live): routine update in status live; change rule score fired; 2 job(s) at priority 10: channel game-95bcda5a, update token 1a6c102d…');
INSERT INTO activity_trace VALUES (53, 'ride-95bcda5a', 1796611898132, 'push-decided', 'event 88bebda2-eff0-4dae-8c88-17f453551003 at 2026-12-07T02:49:49.890Z (arriving): entered status arriving; 2 job(s) at priority 5: update token 5109c237…, update token 7b223268…');
INSERT INTO activity_trace VALUES (54, 'game-95bcda5a', 1796611898132, 'push-decided', 'event 34f160d1-ded1-45b8-a2fc-b6e783dd72a1 at 2026-12-07T02:49:50.890Z (final): end for terminal status final; 2 job(s) at priority 10: channel game-95bcda5a, update token 1a6c102d…');
INSERT INTO activity_trace VALUES (59, 'ride-95bcda5a', 1796611898433, 'push-decided', 'event 615d8f40-c360-4b82-8889-8374ae18884f at 2026-12-07T02:49:51.890Z (completed): end for terminal status completed; 2 job(s) at priority 10: update token 5109c237…, update token 7b223268…');
INSERT INTO audit VALUES (1, 1796611910713, 'fixture', 'as', 'dlq replay', '{"limit":"100000"}', 'replayed 2, skipped 0, failed 0');
INSERT INTO channels VALUES ('score', 'game-95f8cf34', '1IGzasHIYZMXHjOW6K1ekQ==', 1796611893104, 1796611893192);
INSERT INTO channels VALUES ('score', 'game-95bcda5a', 'MQhLiE8FHSwHzRuPfke3kQ==', 1796611896918, 1796611898162);
INSERT INTO dead_letters VALUES ('5e5875c9-3bab-4313-be88-0f80f8f6237c', 'invalid-event', 'translator', 'event is not JSON: invalid JSON at byte 1: expected a key', NULL, NULL, NULL, NULL, 'event', '\x7b6e6f74206a736f6e', 'replay', 1, 1796611898737, 1796611898737, 1796611898770, '[]', 'replayed', 1796611910704, 1, NULL, NULL);
INSERT INTO dead_letters VALUES ('936d8b3f-07a2-4dee-a803-c45168029b79', 'invalid-event', 'translator', 'event is not JSON: invalid JSON at byte 1: expected a key', NULL, NULL, NULL, NULL, 'event', '\x7b6e6f74206a736f6e', 'replay', 1, 1796611893088, 1796611893088, 1796611893183, '[]', 'replayed', 1796611910704, 1, NULL, NULL);
INSERT INTO follows VALUES ('fan-a-95bcda5a', 'team:arsenal', 1796611896835);
INSERT INTO follows VALUES ('fan-b-95bcda5a', 'team:chelsea', 1796611896835);
INSERT INTO follows VALUES ('fan-b-95bcda5a', 'league:premier-league', 1796611896835);
INSERT INTO follows VALUES ('fan-c-95bcda5a', 'league:premier-league', 1796611896835);
INSERT INTO follows VALUES ('rider-95bcda5a', 'team:arsenal', 1796611910319);
INSERT INTO preferences VALUES ('rider-95bcda5a', true, false);
INSERT INTO push_to_start_tokens VALUES ('fan-a-95bcda5a', 'ScoreAttributes', '0e05550107b3f8958509e8ff6fcfbb2aeafd8b3ab108283833ce00cd39dc6590', 1796611896835, NULL, 'production', 'phone', '18.1', NULL, NULL);
INSERT INTO push_to_start_tokens VALUES ('fan-a-95bcda5a', 'ScoreAttributes', 'f5d690ce72927863036b66daf6dfcf41b2c16f66230f5511535b16babee293a6', 1796611896835, NULL, 'production', 'ipad', '18.1', NULL, NULL);
INSERT INTO push_to_start_tokens VALUES ('fan-b-95bcda5a', 'ScoreAttributes', 'cab01e6d01ea8ec934a73f534238096b0dfac34d3ab48729b46cddea2c0fea2d', 1796611896835, NULL, 'production', 'phone', '18.1', NULL, NULL);
INSERT INTO push_to_start_tokens VALUES ('fan-c-95bcda5a', 'ScoreAttributes', '1a6c102d3dc351aaa88d7d1d8d8ab0157b36ea20fb806c78d6353e297398eebf', 1796611896835, NULL, 'production', 'phone', '17.4', NULL, NULL);
INSERT INTO push_to_start_tokens VALUES ('rider-95bcda5a', 'RideAttributes', 'cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd', 1796611910513, NULL, 'production', 'phone', NULL, NULL, 1);
INSERT INTO schema_version VALUES (1, 1796611892890);
INSERT INTO schema_version VALUES (2, 1796611892896);
INSERT INTO schema_version VALUES (3, 1796611892908);
INSERT INTO schema_version VALUES (4, 1796611892912);
INSERT INTO schema_version VALUES (5, 1796611892926);
INSERT INTO schema_version VALUES (6, 1796611892940);
INSERT INTO schema_version VALUES (7, 1796611892946);
INSERT INTO schema_version VALUES (8, 1796611892949);
INSERT INTO schema_version VALUES (9, 1796611892954);
INSERT INTO schema_version VALUES (10, 1796611892958);
INSERT INTO schema_version VALUES (11, 1796611892964);
INSERT INTO schema_version VALUES (12, 1796611892970);
INSERT INTO update_tokens VALUES ('ride-95bcda5a', 'phone', '7b2232680a36c40a5ae0fdcb39ee34fd296785452a2c9c992953d13c27d78bfb', 1796611896835, 'production', 'en_GB', 1);
INSERT INTO update_tokens VALUES ('ride-95bcda5a', 'ipad', '5109c237445dff6f3f91b90ee8e4cf2d639b30bb1639ef501032f1e33e46d485', 1796611896835, 'production', 'de-DE', 2);
INSERT INTO update_tokens VALUES ('order-95bcda5a', 'phone', '2fd4bc57e68cd1b1ac04cee16aaf6f87e394ab92a80d38e82fefd8ddc409789c', 1796611896835, 'production', NULL, NULL);
INSERT INTO update_tokens VALUES ('game-95bcda5a', 'fan-c-95bcda5a/phone', '1a6c102d3dc351aaa88d7d1d8d8ab0157b36ea20fb806c78d6353e297398eebf', 1796611897508, 'production', NULL, NULL);
INSERT INTO update_tokens VALUES ('ride-next-1', 'phone', 'abababababababababababababababababababababababababababababababab', 1796611910286, 'production', 'de-AT', NULL);
SELECT pg_catalog.setval('activity_trace_seq_seq', 61, true);
SELECT pg_catalog.setval('audit_seq_seq', 1, true);
ALTER TABLE ONLY activities
    ADD CONSTRAINT activities_pkey PRIMARY KEY (id);
ALTER TABLE ONLY activity_trace
    ADD CONSTRAINT activity_trace_pkey PRIMARY KEY (seq);
ALTER TABLE ONLY audit
    ADD CONSTRAINT audit_pkey PRIMARY KEY (seq);
ALTER TABLE ONLY channels
    ADD CONSTRAINT channels_pkey PRIMARY KEY (domain, key);
ALTER TABLE ONLY created_channels
    ADD CONSTRAINT created_channels_pkey PRIMARY KEY (channel_id);
ALTER TABLE ONLY dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (id);
ALTER TABLE ONLY event_claims
    ADD CONSTRAINT event_claims_pkey PRIMARY KEY (event_id);
ALTER TABLE ONLY event_outcomes
    ADD CONSTRAINT event_outcomes_pkey PRIMARY KEY (outcome_id);
ALTER TABLE ONLY follows
    ADD CONSTRAINT follows_pkey PRIMARY KEY (user_id, topic);
ALTER TABLE ONLY late_starts
    ADD CONSTRAINT late_starts_pkey PRIMARY KEY (activity_id, user_id, device_id);
ALTER TABLE ONLY preferences
    ADD CONSTRAINT preferences_pkey PRIMARY KEY (user_id);
ALTER TABLE ONLY push_to_start_tokens
    ADD CONSTRAINT push_to_start_tokens_pkey PRIMARY KEY (user_id, attributes_type, device_id);
ALTER TABLE ONLY schema_version
    ADD CONSTRAINT schema_version_pkey PRIMARY KEY (version);
ALTER TABLE ONLY start_topics
    ADD CONSTRAINT start_topics_pkey PRIMARY KEY (topic, activity_id);
ALTER TABLE ONLY update_tokens
    ADD CONSTRAINT update_tokens_pkey PRIMARY KEY (activity_id, device_id);
CREATE INDEX activities_ended ON activities USING btree (ended_ms) WHERE (ended_ms IS NOT NULL);
CREATE INDEX activity_trace_activity ON activity_trace USING btree (activity_id, at_ms);
CREATE INDEX activity_trace_at ON activity_trace USING btree (at_ms);
CREATE INDEX audit_at ON audit USING btree (at_ms);
CREATE INDEX dead_letters_activity ON dead_letters USING btree (activity_id, last_failed_ms);
CREATE INDEX dead_letters_domain ON dead_letters USING btree (domain, last_failed_ms);
CREATE INDEX dead_letters_reason ON dead_letters USING btree (reason, last_failed_ms);
CREATE INDEX dead_letters_time ON dead_letters USING btree (last_failed_ms);
CREATE INDEX event_claims_received ON event_claims USING btree (received_ms);
CREATE INDEX event_outcomes_at ON event_outcomes USING btree (at_ms);
CREATE INDEX event_outcomes_event ON event_outcomes USING btree (event_id, at_ms);
CREATE INDEX follows_topic ON follows USING btree (topic, user_id);
CREATE INDEX late_starts_waiting ON late_starts USING btree (queued_ms) WHERE (claimed_ms IS NULL);
CREATE INDEX push_to_start_tokens_registered ON push_to_start_tokens USING btree (registered_ms);
CREATE INDEX push_to_start_tokens_token ON push_to_start_tokens USING btree (token);
CREATE INDEX push_to_start_tokens_version ON push_to_start_tokens USING btree (attributes_type, content_version) WHERE (content_version IS NOT NULL);
CREATE INDEX update_tokens_token ON update_tokens USING btree (token);
