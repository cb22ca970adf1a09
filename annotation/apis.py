"""The annotator API. Every item response is built by annotation.selectors._payload (blinded)."""

from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import IsAnnotator
from annotation import selectors
from annotation.services import AnnotationRejected, annotation_submit


class _ItemOutput(serializers.Serializer):
    item = serializers.CharField()
    context = serializers.CharField()
    generation = serializers.CharField()
    position = serializers.IntegerField()
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    labels = serializers.ListField(child=serializers.CharField())
    previous = serializers.CharField(allow_null=True)
    next = serializers.CharField(allow_null=True)
    annotation = serializers.DictField(allow_null=True)


class AnnotateNextApi(APIView):
    """GET the first item of the caller's queue they have not annotated: 200 with the item, 204 when all are done."""

    permission_classes = [IsAuthenticated, IsAnnotator]  # a list keeps IsAnnotator's message

    OutputSerializer = _ItemOutput

    def get(self, request):
        payload = selectors.assignment_next(user=request.user, pool_name=request.query_params.get("pool") or None)
        if payload is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(self.OutputSerializer(payload).data)


class AnnotateItemApi(APIView):
    """GET one of the caller's own items (to go back and edit), with their saved annotation."""

    permission_classes = [IsAuthenticated, IsAnnotator]  # a list keeps IsAnnotator's message

    OutputSerializer = _ItemOutput

    def get(self, request, public_id: str):
        payload = selectors.assignment_item(user=request.user, public_id=public_id)
        if payload is None:
            # Unknown and not-yours look the same, so ids cannot be probed.
            raise NotFound("no such item among yours")
        return Response(self.OutputSerializer(payload).data)


class AnnotationSubmitApi(APIView):
    """POST an annotation: 201 when first saved, 200 when it updates the caller's earlier one."""

    permission_classes = [IsAuthenticated, IsAnnotator]  # a list keeps IsAnnotator's message

    class InputSerializer(serializers.Serializer):
        item = serializers.CharField(max_length=32)
        label = serializers.CharField(max_length=32)
        extraneous = serializers.BooleanField(default=False)
        extraneous_spans = serializers.ListField(
            child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
            default=list,
            max_length=500,
        )
        notes = serializers.CharField(allow_blank=True, default="", max_length=5000)
        tags = serializers.ListField(child=serializers.CharField(max_length=32), default=list, max_length=20)
        seconds = serializers.FloatField(default=0.0, min_value=0.0)

    class OutputSerializer(serializers.Serializer):
        item = serializers.CharField()
        label = serializers.CharField(source="annotation.label")
        extraneous = serializers.BooleanField(source="annotation.extraneous")
        extraneous_spans = serializers.ListField(source="spans", child=serializers.ListField())
        notes = serializers.CharField(source="annotation.notes")
        tags = serializers.ListField(source="annotation.tags", child=serializers.CharField())

    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        try:
            submitted = annotation_submit(
                user=request.user,
                public_id=values["item"],
                label=values["label"],
                extraneous=values["extraneous"],
                spans=values["extraneous_spans"],
                notes=values["notes"],
                tags=values["tags"],
                seconds=values["seconds"],
            )
        except AnnotationRejected as exc:
            return Response({"detail": str(exc), "field": exc.field}, status=exc.status)
        return Response(
            self.OutputSerializer(submitted).data,
            status=status.HTTP_201_CREATED if submitted.created else status.HTTP_200_OK,
        )
