from tests.server.conftest import new_task
from tests.server.helpers import upload_fields


def test_a_selfplay_game_goes_in(run, alice, selfplay_games):
    user, client = alice
    task = new_task(client)
    game = selfplay_games[0]
    response = client.post("/api/v1/games/training/", upload_fields(task["id"], game), format="multipart")
    assert response.status_code == 201, response.content
