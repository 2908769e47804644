"""A dropped path (issue 35): an image anywhere the user names is attached, but a path inside the workspace is read
beneath it, so a link the sandboxed code planted there never carries a file from outside to the model."""

from __future__ import annotations

from pathlib import Path

from images_support import write_picture

from coder.engine.mentions import dropped_images


def test_a_link_planted_in_the_workspace_is_not_followed_out_and_the_control_is_read(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "shots").mkdir(parents=True)
    outside = tmp_path / "private"
    outside.mkdir()
    secret = write_picture(outside / "secret.png", 40, 30)
    (workspace / "shot.png").symlink_to(secret)  # the plant: a file link
    (workspace / "linked").symlink_to(outside, target_is_directory=True)  # and a directory link
    images, refused = dropped_images(f"look at {workspace}/shot.png and '{workspace}/linked/secret.png'", workspace)
    assert images == [] and refused == []
    control, _ = dropped_images(f"look at {secret}", workspace)  # the user's own file outside: read
    assert [(i.name, i.width) for i in control] == [("secret.png", 40)]
    write_picture(workspace / "shots" / "real one.png", 20, 10)
    inside, _ = dropped_images(f"see {workspace}/shots/real\\ one.png", workspace)  # a real workspace file: read
    assert [(i.name, i.width) for i in inside] == [("real one.png", 20)]


def test_what_is_not_an_image_file_is_left_as_text(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "fake.png").write_text("not a picture")
    images, refused = dropped_images(f"{tmp_path}/notes.txt {tmp_path}/fake.png /nonexistent/x.png", tmp_path / "w")
    assert images == [] and len(refused) == 1 and "fake.png" in refused[0]
